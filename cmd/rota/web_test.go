package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store/sqlite"
)

// rota serve --http-addr serves the API and the dashboard; a job enqueued through the API runs on
// the node, and a wait through it returns the program's output.
func TestServeHTTPAPI(t *testing.T) {
	e := newEnv(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := startServe(t, e, "--http-addr", "127.0.0.1:0", "--api-token-file", tokenFile)
	m := regexp.MustCompile(`HTTP API at (http://[^ "]+)/v1/`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no API address in the log:\n%s", log.String())
	}
	base := m[1]
	call := func(method, path, body, token string, out any) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
	if code := call("GET", "/v1/queues", "", "wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	// The dashboard is on the same address, behind the same token.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2F" {
		t.Fatalf("dashboard signed out: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var in struct {
		Job struct {
			ID int64 `json:"id"`
		} `json:"job"`
	}
	if code := call("POST", "/v1/jobs", `{"kind":"exec","args":{"program":"echo","args":["via","api"]}}`, "tok-123", &in); code != http.StatusCreated {
		t.Fatalf("enqueue: %d", code)
	}
	var res struct {
		Done bool `json:"done"`
		Job  struct {
			State  string          `json:"state"`
			Result json.RawMessage `json:"result"`
		} `json:"job"`
	}
	path := "/v1/jobs/" + strconv.FormatInt(in.Job.ID, 10) + "/wait?timeout=30s"
	if code := call("GET", path, "", "tok-123", &res); code != http.StatusOK || !res.Done || res.Job.State != "completed" ||
		!strings.Contains(string(res.Job.Result), `via api\n`) {
		t.Fatalf("wait: %d %+v %s", code, res, res.Job.Result)
	}
}

func TestServeHTTPAPINeedsAToken(t *testing.T) {
	e := newEnv(t)
	t.Setenv(apiTokenEnv, "")
	e.run("serve", "--http-addr", "127.0.0.1:0").fails(t, "--http-addr needs an API token: set ROTA_API_TOKEN")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.run("serve", "--http-addr", "127.0.0.1:0", "--api-token-file", empty).fails(t, "is empty")
}

// --api-no-auth is refused where it would not be what the operator thinks: on an address other
// machines can reach, or with a token that it would ignore.
func TestServeWebRefusesNoAuthOffLoopbackOrWithAToken(t *testing.T) {
	e := newEnv(t)
	// A serve that starts anyway runs until this ends, and then exits 0: the test fails then,
	// instead of waiting for go test's own timeout.
	run := func(args ...string) result {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return e.runCtx(ctx, append([]string{"serve"}, args...)...)
	}
	t.Setenv(apiTokenEnv, "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		run("--http-addr", addr, "--api-no-auth").fails(t, "--api-no-auth serves only on a loopback address")
	}
	t.Setenv(apiTokenEnv, strings.Repeat("t", 32))
	run("--http-addr", "127.0.0.1:0", "--api-no-auth").fails(t, "are both set")
}

func TestWebCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "127.9.9.9:1": true, "[::1]:8080": true, "localhost:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.1:8080": false, "8080": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want loopback %v", addr, err, ok)
		}
	}
}

// Without a token, rota serve answers only Host names no web page can point at it (DNS
// rebinding), and those allowed.
func TestServeWebNoAuthServesOnlyLoopbackAndAllowedHosts(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[webNoopArgs](func(context.Context, *rota.Job[webNoopArgs]) error { return nil }), nil)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: workers, Logger: slog.New(slog.DiscardHandler), Leader: rota.LeaderConfig{Standalone: true}})
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	stop, err := serveWeb(node, webOptions{addr: "127.0.0.1:0", noAuth: true, allowedHosts: []string{"jobs.internal"}},
		slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	m := regexp.MustCompile(`HTTP API at http://([^ "/]+)/v1/`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no API address in the log:\n%s", log.String())
	}
	get := func(host, path string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+m[1]+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for host, want := range map[string]int{
		"evil.example": http.StatusMisdirectedRequest, "evil.example:80": http.StatusMisdirectedRequest,
		m[1]: http.StatusOK, "localhost:1234": http.StatusOK, "jobs.internal": http.StatusOK,
	} {
		for _, path := range []string{"/v1/queues", "/schedules"} {
			if got := get(host, path); got != want {
				t.Errorf("GET %s with Host %q: %d, want %d", path, host, got, want)
			}
		}
	}
}

// webNoopArgs is a kind for a node that must have one to exist, and never runs it.
type webNoopArgs struct{}

func (webNoopArgs) Kind() string { return "noop" }

func TestWebParseTrustedProxies(t *testing.T) {
	got, err := parseTrustedProxies([]string{"10.0.0.0/8", "192.0.2.7", "::ffff:198.51.100.1", "2001:db8::/32", "10.1.2.3/8"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "198.51.100.1/32", "2001:db8::/32", "10.0.0.0/8"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("entry %d: %s, want %s", i, got[i], want[i])
		}
	}
	if _, err := parseTrustedProxies([]string{"proxy.internal"}); err == nil {
		t.Error("a host name was taken as a trusted proxy")
	}
}
