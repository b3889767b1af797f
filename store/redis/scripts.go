package redis

import (
	"embed"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// The scripts live in lua/*.lua, one per transition, and are composed at init with the shared
// prelude (and the libraries a script names), as BullMQ composes its includes. A script whose
// file starts with "#!ro" reads only: it gets the no-writes flag, so it may run on a replica
// through EVALSHA_RO. Every other one gets a bare "#!lua" line, which makes Redis refuse it
// before it starts when memory is full (no half-written transition) and check that every key
// it declares is in one slot. A script that may end or delete jobs calls finish(), which settles
// their dependents: it is sent the dependency error texts as its last arguments (see settles).
//
//go:embed lua/*.lua
var luaFiles embed.FS

// script is one composed Lua script.
type script struct {
	name     string
	readOnly bool
	// settles is set for a script that calls finish(): it may cancel dependents, with texts
	// from Go (depTextArgs) appended to its ARGV.
	settles bool
	*goredis.Script
}

func lua(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err) // a mistake of the build: the files are embedded
	}
	return string(b)
}

func newScript(name string, libs ...string) *script {
	body := lua(name)
	readOnly := strings.HasPrefix(body, "#!ro\n")
	body = strings.TrimPrefix(body, "#!ro\n")
	header := "#!lua\n"
	if readOnly {
		header = "#!lua flags=no-writes\n"
	}
	var src strings.Builder
	src.WriteString(header)
	src.WriteString(lua("prelude"))
	for _, l := range libs {
		src.WriteString(lua(l))
	}
	src.WriteString(body)
	settles := strings.Contains(body, "finish()")
	return &script{name: name, readOnly: readOnly, settles: settles, Script: goredis.NewScript(src.String())}
}

var (
	scriptMigrate      = newScript("migrate")
	scriptIdentity     = newScript("identity")
	scriptNow          = newScript("now")
	scriptInsert       = newScript("insert", "insertdeps", "insertlib")
	scriptClaim        = newScript("claim")
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
)

// allScripts is what Open loads with SCRIPT LOAD, so that the first EVALSHA of each finds it.
var allScripts = []*script{
	scriptMigrate, scriptIdentity, scriptNow, scriptInsert, scriptClaim, scriptHeartbeat,
	scriptComplete, scriptRescueFind, scriptRescue, scriptGet, scriptList, scriptCancel,
	scriptRetry, scriptDelete, scriptPrune, scriptStats, scriptLoad, scriptPause, scriptLimitSet,
	scriptLimitList, scriptSchedUpsert, scriptSchedGet, scriptSchedDelete, scriptSchedPause,
	scriptPlan, scriptLeaseAcquire, scriptLeaseRelease, scriptLeaseGet, scriptNodeRegister,
	scriptNodeList, scriptNodeDelete, scriptWorkflows, scriptRetryWF, scriptMinutesAdd,
	scriptMinutesRead, scriptMinutesPrune,
}
