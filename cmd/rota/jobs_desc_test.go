package main

import (
	"encoding/json"
	"testing"
)

// --desc still works (deprecated) and says so on stderr: on stdout, where cobra's own notice
// goes, `rota -o json jobs list --desc | jq` would read it before the JSON and fail.
func TestDeprecatedDescKeepsJSONOutputValid(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "exec", "--", "echo", "hi").ok(t)
	r := e.run("-o", "json", "jobs", "list", "--desc").ok(t)
	var rows []json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("stdout of -o json jobs list --desc is not JSON (%v):\n%s", err, r.stdout)
	}
}
