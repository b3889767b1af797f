package redis

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// The scripts live in lua/*.lua, one per transition, and run as the functions of one Redis
// function library: the shared prelude and the libraries (insertdeps, insertlib, schedlib) once,
// then each script's body as a registered function (see library). A library is loaded once
// (FUNCTION LOAD) and its closures are built then, where an EVAL script rebuilds everything it
// defines on every call; Redis also keeps a library in its RDB and AOF files and sends it to
// replicas, where a cached script is lost at every restart and failover.
//
// A script whose file starts with "#!ro" reads only: its function gets the no-writes flag, so it
// may run on a replica through FCALL_RO. Every other one is refused by Redis before it starts
// when memory is full (no half-written transition). A script that may end or delete jobs calls
// finish(), which settles their dependents: it is sent how many it may settle as its last
// argument (see settles), and its reply says when it left some parked (see wrappedBody).
//
// The library's name, and so its functions' names, carry a hash of the sources, so nodes of two
// releases sharing one Redis each call their own.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// libraries are the Lua files every function may call, in the order they are defined.
var libraries = []string{"insertdeps", "insertlib", "schedlib"}

// libName is the function library's name: rota_ and a hash of every Lua source and of the
// texts the library is built with (depTextsLua).
var libName = func() string {
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		panic(err)
	}
	h := sha256.New()
	for _, f := range files { // fs.Glob sorts them
		b, _ := fs.ReadFile(luaFiles, f)
		h.Write([]byte(f))
		h.Write(b)
	}
	h.Write([]byte(depTextsLua))
	return "rota_" + hex.EncodeToString(h.Sum(nil))[:16]
}()

// script is one transition: a function of the library, and an EVAL script of the same code for
// the two that large calls run in a MULTI (see eval).
type script struct {
	name string
	// fn is the function's name in the library.
	fn       string
	readOnly bool
	// allowOOM (a body starting "#!oom") lets the script run when Redis is out of memory: one
	// that frees memory (retention) is how a full namespace gets out.
	allowOOM bool
	// settles is set for a script that calls finish(): it may settle dependents, as many as
	// the Store's settle batch, appended to its ARGV, and cancel them with texts from Go
	// (depTextsLua, constants of the library's source).
	settles bool
	// waitIf, when set, decides from a call's reply (its parked mark taken off) whether the
	// call waits for replicas (WithWaitReplicas); unset, every call of a script that writes does.
	waitIf func(reply any) bool
	// body is the script's own code, without its "#!ro" line.
	body string
	libs []string
	// lean is set for a script that reads none of the call's state tables begin() empties, nor
	// NOW (NOWS is set): begin skips them, which a call of one job spends a tenth of its time on.
	lean bool
	// eval is the script's EVAL form, made on first use. A MULTI of several calls sends it with
	// its source: a function missing after FUNCTION FLUSH, or a cached script after SCRIPT
	// FLUSH, would fail its call alone inside the transaction while the others ran.
	eval func() *goredis.Script
}

// waitingIf sets sc.waitIf and returns sc.
func (sc *script) waitingIf(wait func(reply any) bool) *script {
	sc.waitIf = wait
	return sc
}

// leanStart marks sc lean and returns it.
func (sc *script) leanStart() *script {
	sc.lean = true
	return sc
}

// begin is the call to the prelude's begin() that starts the script, with the call's KEYS and
// ARGV named keys and args.
func (sc *script) begin(keys, args string) string {
	if sc.lean {
		return "begin(" + keys + ", " + args + ", true)"
	}
	return "begin(" + keys + ", " + args + ")"
}

// wrappedBody is the body as it runs: that of a script that settles returns its reply through
// parkedReply, which marks a reply whose call left dependents to settle (see Store.run).
func (sc *script) wrappedBody() string {
	if !sc.settles {
		return sc.body
	}
	return "return parkedReply((function()\n" + sc.body + "\nend)())"
}

func lua(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err) // a mistake of the build: the files are embedded
	}
	return string(b)
}

// newScript names a script and the libraries among libraries its EVAL form needs.
func newScript(name string, libs ...string) *script {
	body := lua(name)
	readOnly := strings.HasPrefix(body, "#!ro\n")
	body = strings.TrimPrefix(body, "#!ro\n")
	allowOOM := strings.HasPrefix(body, "#!oom\n")
	body = strings.TrimPrefix(body, "#!oom\n")
	sc := &script{name: name, fn: libName + "_" + name, readOnly: readOnly, allowOOM: allowOOM,
		settles: callsFinish(body), body: body, libs: libs}
	sc.eval = sync.OnceValue(func() *goredis.Script { return goredis.NewScript(sc.evalSource()) })
	return sc
}

// callsFinish reports whether a script's code, its comments left out, calls finish(): a comment
// that names finish() does not make a script one that settles.
func callsFinish(body string) bool {
	for line := range strings.Lines(body) {
		code, _, _ := strings.Cut(line, "--")
		if strings.Contains(code, "finish()") {
			return true
		}
	}
	return false
}

// evalSource is the script as one EVAL chunk: the prelude, its libraries, then its body after
// begin() with the call's KEYS and ARGV. "#!lua" makes Redis refuse it when memory is full, as
// it refuses a function without flags.
func (sc *script) evalSource() string {
	var src strings.Builder
	if sc.allowOOM {
		src.WriteString("#!lua flags=allow-oom\n")
	} else {
		src.WriteString("#!lua\n")
	}
	src.WriteString("local keys0, argv0 = KEYS, ARGV\n")
	src.WriteString(depTextsLua)
	src.WriteString(lua("prelude"))
	for _, l := range sc.libs {
		src.WriteString(lua(l))
	}
	src.WriteString(sc.begin("keys0", "argv0") + "\n")
	src.WriteString(sc.wrappedBody())
	return src.String()
}

// library is the source FUNCTION LOAD takes: the prelude and the libraries once, then every
// script as a function whose body runs after begin().
func library(scripts []*script) string {
	var src strings.Builder
	src.WriteString("#!lua name=" + libName + "\n")
	src.WriteString(depTextsLua)
	src.WriteString(lua("prelude"))
	for _, l := range libraries {
		src.WriteString(lua(l))
	}
	for _, sc := range scripts {
		fmt.Fprintf(&src, "redis.register_function{function_name = '%s', callback = function(keys, args)\n%s\n", sc.fn, sc.begin("keys", "args"))
		src.WriteString(sc.wrappedBody())
		src.WriteString("\nend")
		switch {
		case sc.readOnly:
			src.WriteString(", flags = {'no-writes'}")
		case sc.allowOOM:
			src.WriteString(", flags = {'allow-oom'}")
		}
		src.WriteString("}\n")
	}
	return src.String()
}

var (
	scriptMigrate      = newScript("migrate")
	scriptIdentity     = newScript("identity")
	scriptNow          = newScript("now")
	scriptInsert       = newScript("insert", "insertdeps", "insertlib")
	scriptInsertRun    = newScript("insertrun", "insertdeps", "insertlib").leanStart()
	scriptClaim        = newScript("claim").waitingIf(claimLimited)
	scriptHeartbeat    = newScript("heartbeat")
	scriptComplete     = newScript("complete")
	scriptRescueFind   = newScript("rescuefind")
	scriptRescue       = newScript("rescue")
	scriptGet          = newScript("get")
	scriptList         = newScript("list")
	scriptCancel       = newScript("cancel")
	scriptRetry        = newScript("retry")
	scriptDelete       = newScript("delete")
	scriptPrune        = newScript("prune")
	scriptStats        = newScript("stats")
	scriptLoad         = newScript("load")
	scriptPause        = newScript("pause")
	scriptLimitSet     = newScript("limitset")
	scriptLimitList    = newScript("limitlist")
	scriptLimitUsage   = newScript("limitusage")
	scriptSchedUpsert  = newScript("schedupsert", "schedlib")
	scriptSchedGet     = newScript("schedget")
	scriptSchedDelete  = newScript("scheddelete", "schedlib")
	scriptSchedPause   = newScript("schedpause")
	scriptPlan         = newScript("plan", "insertdeps", "insertlib")
	scriptLeaseAcquire = newScript("leaseacquire")
	scriptLeaseRelease = newScript("leaserelease")
	scriptLeaseGet     = newScript("leaseget")
	scriptNodeRegister = newScript("noderegister")
	scriptNodeList     = newScript("nodelist")
	scriptNodeDelete   = newScript("nodedelete")
	scriptWorkflows    = newScript("workflows")
	scriptRetryWF      = newScript("retryworkflow")
	scriptMinutesAdd   = newScript("minutesadd")
	scriptMinutesRead  = newScript("minutesread")
	scriptMinutesPrune = newScript("minutesprune")
	scriptSettle       = newScript("settle")
)

// allScripts are the library's functions.
var allScripts = []*script{
	scriptMigrate, scriptIdentity, scriptNow, scriptInsert, scriptInsertRun, scriptClaim, scriptHeartbeat,
	scriptComplete, scriptRescueFind, scriptRescue, scriptGet, scriptList, scriptCancel,
	scriptRetry, scriptDelete, scriptPrune, scriptStats, scriptLoad, scriptPause, scriptLimitSet,
	scriptLimitList, scriptLimitUsage, scriptSchedUpsert, scriptSchedGet, scriptSchedDelete, scriptSchedPause,
	scriptPlan, scriptLeaseAcquire, scriptLeaseRelease, scriptLeaseGet, scriptNodeRegister,
	scriptNodeList, scriptNodeDelete, scriptWorkflows, scriptRetryWF, scriptMinutesAdd,
	scriptMinutesRead, scriptMinutesPrune, scriptSettle,
}

// librarySource is what loadLibrary sends.
var librarySource = library(allScripts)
