package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// serve --metrics-addr exposes the node's metrics over HTTP; a job run shows in the counters.
func TestServeExposesMetrics(t *testing.T) {
	e := newEnv(t)
	log := startServe(t, e, "--metrics-addr", "127.0.0.1:0")
	addr := regexp.MustCompile(`metrics at (http://[0-9.:]+/metrics)`).FindStringSubmatch(log.String())
	if addr == nil {
		t.Fatalf("serve did not say where its metrics are:\n%s", log.String())
	}
	e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "true").ok(t)
	var body string
	waitFor(t, func() bool {
		resp, err := http.Get(addr[1])
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `rota_job_attempts_total{kind="exec",outcome="completed",queue="default"} 1`)
	})
	for _, want := range []string{`rota_queue_jobs{queue="default",state="completed"} 1`, "rota_node_leader 1", "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// On a loopback address, a request for another Host is a page reached by DNS rebinding.
	req, _ := http.NewRequest("GET", addr[1], nil)
	req.Host = "rebind.example:9464"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("metrics for Host %s: %s, want 421", req.Host, resp.Status)
	}
}
