package redis

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// The scripts read the time only in the prelude, where WithClock can replace it, and never give
// a key a TTL: either would break virtual time, and a TTL deletes state silently.
func TestScriptsKeepTime(t *testing.T) {
	forbidden := regexp.MustCompile(`(?i)'(TIME|EXPIRE|PEXPIRE|EXPIREAT|PEXPIREAT|SETEX|PSETEX|GETEX)'|'(PX|EX)'`)
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		b, _ := fs.ReadFile(luaFiles, f)
		src := string(b)
		if f == "lua/prelude.lua" {
			src = strings.Replace(src, "rcall('TIME')", "", 1)
		}
		if m := forbidden.FindString(src); m != "" {
			t.Errorf("%s uses %s", f, m)
		}
	}
}

// A script that moves or drops jobs ends with finish(), so that a job it ends settles its
// dependents in the same script, and is sent how many it may settle.
func TestScriptsSettleDependents(t *testing.T) {
	moves := regexp.MustCompile(`\b(move|drop)\(`)
	for _, sc := range allScripts {
		body := lua(sc.name)
		if moves.MatchString(body) && !sc.settles {
			t.Errorf("%s moves or drops jobs but does not call finish()", sc.name)
		}
	}
}

// Only code that calls finish() makes a script settle: a comment naming it does not, and a
// script that does not settle is sent no settle arguments and is not wrapped for parked ends.
func TestCallsFinishReadsCodeOnly(t *testing.T) {
	for body, want := range map[string]bool{
		"checkMeta()\nfinish()\nreturn 1\n":               true,
		"x = 1 -- then finish()\nreturn x\n":              false,
		"-- it needs no finish(): nothing ends\nreturn 1": false,
	} {
		if got := callsFinish(body); got != want {
			t.Errorf("callsFinish(%q) = %v, want %v", body, got, want)
		}
	}
	if scriptInsertRun.settles {
		t.Error("insertrun settles, but it ends no job")
	}
	if !scriptComplete.settles {
		t.Error("complete does not settle")
	}
}
