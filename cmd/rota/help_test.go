package main

import (
	"strings"
	"testing"
)

// A store URL that holds a password belongs in ROTA_STORE (docs/security.md), whose value is
// --store's default: the help pages, which print flag defaults, show it without the password.
func TestHelpDoesNotPrintStorePassword(t *testing.T) {
	t.Setenv("ROTA_STORE", "postgres://rota:Sup3rSecretPw@db.internal/rota")
	for _, args := range [][]string{{"--help"}, {"jobs"}, {"jobs", "list", "--help"}, {"serve", "--help"}} {
		var stdout, stderr syncBuffer
		code := newApp(&stdout, &stderr).run(t.Context(), args)
		out := stdout.String() + stderr.String()
		if code != 0 {
			t.Fatalf("rota %v exited %d:\n%s", args, code, out)
		}
		if strings.Contains(out, "Sup3rSecretPw") {
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "Sup3rSecretPw") {
					line = strings.TrimSpace(l)
				}
			}
			t.Errorf("rota %v prints the store's password: %s", args, line)
		}
	}
}

// pflag reads a back-quoted word in a flag's usage as the name of its value: --node-id's usage
// quotes none, so its help reads "--node-id string".
func TestServeHelpNodeIDValueName(t *testing.T) {
	t.Setenv("ROTA_STORE", "")
	var stdout, stderr syncBuffer
	if code := newApp(&stdout, &stderr).run(t.Context(), []string{"serve", "--help"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.Contains(l, "--node-id") && !strings.Contains(l, "--node-id string") {
			t.Fatalf("serve --help shows: %s", strings.TrimSpace(l))
		}
	}
}
