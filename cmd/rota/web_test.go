package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
