package builtin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rotahq/rota"
)

// credentialArgs calls u with credentials and one ordinary header.
func credentialArgs(u string) HTTPArgs {
	return HTTPArgs{URL: u, Headers: map[string]string{
		"Authorization":       "Bearer s3cret",
		"Proxy-Authorization": "Basic cHJveHk=",
		"Cookie":              "session=abc",
		"X-Other":             "kept",
	}}
}

// seen records, by path, the headers each request arrived with.
type seen struct {
	mu sync.Mutex
	h  map[string]http.Header
}

func (s *seen) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		s.h = map[string]http.Header{}
	}
	s.h[r.URL.Path] = r.Header.Clone()
}

func (s *seen) get(path string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h[path]
}

// redirecting serves any path with ?to=X by redirecting to X, and records every request.
func redirecting(s *seen) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
		}
	}))
}

// A redirect to another port of the same host is another origin, possibly another owner: the
// job's credentials stay behind, the other headers go on. Go's client alone would send them.
func TestHTTPRedirectKeepsCredentialsToOrigin(t *testing.T) {
	var s seen
	a, b := redirecting(&s), redirecting(&s)
	defer a.Close()
	defer b.Close()
	w := newTestHTTP()
	for _, tc := range []struct {
		url, landing string
		creds        bool
	}{
		{a.URL + "/job?to=" + url.QueryEscape(b.URL+"/other-port"), "/other-port", false},
		{a.URL + "/job?to=/same-origin", "/same-origin", true},
		// Once off the origin, they stay off, even back on it.
		{a.URL + "/job?to=" + url.QueryEscape(b.URL+"/bounce?to="+url.QueryEscape(a.URL+"/back")), "/back", false},
	} {
		if _, err := w.run(t.Context(), credentialArgs(tc.url)); err != nil {
			t.Fatal(err)
		}
		h := s.get(tc.landing)
		if h == nil {
			t.Fatalf("%s: no request arrived", tc.landing)
		}
		for _, name := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
			if got := h.Get(name) != ""; got != tc.creds {
				t.Errorf("%s: %s sent = %v, want %v", tc.landing, name, got, tc.creds)
			}
		}
		if h.Get("X-Other") != "kept" {
			t.Errorf("%s: X-Other = %q", tc.landing, h.Get("X-Other"))
		}
	}
	if h := s.get("/job"); h.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("the job's own URL got Authorization %q", h.Get("Authorization"))
	}
}

func TestHTTPSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"http://h/x", "http://h:80/y", true},
		{"https://h/x", "https://H:443/y", true},
		{"http://h/x", "http://h:8080/x", false},
		{"https://h/x", "http://h/x", false}, // a downgrade sends them in clear text
		{"https://h:8443/x", "http://h:8443/x", false},
		{"http://h/x", "http://sub.h/x", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := sameOrigin(a, b); got != tc.same {
			t.Errorf("sameOrigin(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// A redirect loop ends after ten requests, as with Go's default client.
func TestHTTPStopsAfterTenRedirects(t *testing.T) {
	var (
		mu   sync.Mutex
		hits int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	defer srv.Close()
	_, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") || isPermanent(err) {
		t.Fatalf("error = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 10 {
		t.Fatalf("%d requests, want 10", hits)
	}
}

// A client the node is given is used as given: the address guard is not added to it (the node
// chose its transport), but without a CheckRedirect of its own it keeps credentials to the
// origin all the same.
func TestHTTPGivenClient(t *testing.T) {
	var s seen
	a, b := redirecting(&s), redirecting(&s)
	defer a.Close()
	defer b.Close()
	w := newHTTPWorker(Config{MaxResultBytes: rota.MaxResultBytesDefault, HTTPClient: &http.Client{}})
	if _, err := w.run(t.Context(), credentialArgs(a.URL+"/job?to="+url.QueryEscape(b.URL+"/landed"))); err != nil {
		t.Fatalf("loopback through a given client: %v", err)
	}
	if h := s.get("/landed"); h == nil || h.Get("Authorization") != "" || h.Get("Cookie") != "" {
		t.Fatalf("landed with %v", h)
	}
}
