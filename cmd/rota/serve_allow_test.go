package main

import "testing"

// A relative --allow-program entry with a slash is refused at start: a job runs such a program
// relative to its own "dir", so the entry, matched as a string, would allow a file of that name
// in any directory a job names (builtin's TestExecAllowListRelativeProgram covers the match).
func TestAllowProgramRefusesARelativePath(t *testing.T) {
	e := newEnv(t)
	e.run("serve", "--allow-program", "scripts/backup.sh").fails(t, `--allow-program "scripts/backup.sh": give an absolute path`)
}
