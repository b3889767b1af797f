package main

import (
	"net/http"
	"regexp"
	"testing"
)

// $ROTA_API_TOKEN is trimmed as --api-token-file's token is: one that reaches the environment
// with its file's newline (a Kubernetes secret made with --from-file, an EnvironmentFile) would
// be one no client can send, HTTP header values losing their surrounding whitespace.
func TestEnvTokenWithNewlineIsUsable(t *testing.T) {
	e := newEnv(t)
	const token = "0123456789abcdef0123456789abcdef"
	t.Setenv(apiTokenEnv, token+"\n")

	log := startServe(t, e, "--http-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`HTTP API at (http://[^ "]+)/v1/`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no API address in the log:\n%s", log.String())
	}
	req, _ := http.NewRequest("GET", m[1]+"/v1/queues", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/queues with the token of $%s (set with a trailing newline): %s", apiTokenEnv, resp.Status)
	}
}
