package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// $ROTA_API_TOKEN is trimmed as --api-token-file's token is: one that reaches the environment
// with its file's newline (a Kubernetes secret made with --from-file, an EnvironmentFile) would
// be one no client can send, HTTP header values losing their surrounding whitespace.
func TestEnvTokenWithNewlineIsUsable(t *testing.T) {
	e := newEnv(t)
	const token = "0123456789abcdef0123456789abcdef"
	t.Setenv(apiTokenEnv, token+"\n")

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- newApp(&stdout, &stderr).run(ctx, []string{"--store", e.store, "serve", "--http-addr", "127.0.0.1:0"})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "rota: serving") {
		select {
		case code := <-done:
			done <- code
			if code != 0 {
				return // refused at start, saying why: a fix too
			}
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := regexp.MustCompile(`HTTP API at (http://[^ "]+)/v1/`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no API address in the log:\n%s", stderr.String())
	}
	req, _ := http.NewRequest("GET", m[1]+"/v1/queues", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/queues with the token of $%s (set with a trailing newline): %s; serve started without a word", apiTokenEnv, resp.Status)
	}
}
