package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store/sqlite"
)

// newDashboard is a dashboard with cfg on a real SQLite store, without a node; it fills in
// cfg's Client and Logger.
func newDashboard(t *testing.T, cfg Config) (*Dashboard, string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Client, cfg.Logger = rota.NewClient(st, &rota.ClientConfig{Logger: quiet}), quiet
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(d)
	t.Cleanup(ts.Close)
	return d, ts.URL
}

// signIn signs in with tok and returns the status and the session cookie set, if any.
func signIn(t *testing.T, base, tok string) (int, *http.Cookie) {
	t.Helper()
	resp, err := browser(t).PostForm(base+"/login", url.Values{"token": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			return resp.StatusCode, c
		}
	}
	return resp.StatusCode, nil
}

// signedIn reports whether a browser holding only cookie gets the overview.
func signedIn(t *testing.T, base string, cookie *http.Cookie) bool {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	resp, err := browser(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Each sign-in gets its own random session, which signing out ends on the server: the cookie,
// replayed from anywhere, no longer works, while other sessions go on.
func TestSessionsAreRandomPerSignInAndEndOnSignOut(t *testing.T) {
	_, base := newDashboard(t, Config{Token: token})
	_, first := signIn(t, base, token)
	_, second := signIn(t, base, token)
	if first == nil || second == nil || first.Value == second.Value || len(first.Value) < 43 {
		t.Fatalf("sessions %v and %v: want two different random ids of 32 bytes", first, second)
	}
	if strings.Contains(first.Value, token) || !first.HttpOnly || first.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v", first)
	}
	if !signedIn(t, base, first) || !signedIn(t, base, second) {
		t.Fatal("a fresh session does not sign in")
	}
	req, _ := http.NewRequest("POST", base+"/logout", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: first.Value})
	resp, err := browser(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	if signedIn(t, base, first) {
		t.Fatal("the cookie still signs in after signing out")
	}
	if !signedIn(t, base, second) {
		t.Fatal("signing one browser out ended another's session")
	}
}

// A session ends SessionTTL after signing in, however much it is used, and the cookie says so.
func TestSessionsExpire(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	_, base := newDashboard(t, Config{Token: token, Clock: clock})
	_, c := signIn(t, base, token)
	if c == nil || c.MaxAge != int(SessionTTLDefault.Seconds()) {
		t.Fatalf("cookie %+v, want Max-Age %v", c, SessionTTLDefault)
	}
	clock.Advance(SessionTTLDefault - time.Second)
	if !signedIn(t, base, c) {
		t.Fatal("the session ended before its TTL")
	}
	clock.Advance(time.Second)
	if signedIn(t, base, c) {
		t.Fatalf("the session outlived its TTL of %v", SessionTTLDefault)
	}
	_, short := newDashboard(t, Config{Token: token, Clock: clock, SessionTTL: time.Minute})
	_, c = signIn(t, short, token)
	clock.Advance(time.Minute)
	if signedIn(t, short, c) {
		t.Fatal("Config.SessionTTL is not applied")
	}
}

// Sign-ins beyond MaxSessions end the oldest sessions: memory stays bounded.
func TestSessionsAreBounded(t *testing.T) {
	d, base := newDashboard(t, Config{Token: token, MaxSessions: 2})
	var cookies []*http.Cookie
	for range 3 {
		_, c := signIn(t, base, token)
		cookies = append(cookies, c)
	}
	if n := d.sessions.count(); n != 2 {
		t.Fatalf("%d sessions kept, want 2", n)
	}
	if signedIn(t, base, cookies[0]) || !signedIn(t, base, cookies[1]) || !signedIn(t, base, cookies[2]) {
		t.Fatal("want the oldest session ended and the two newest kept")
	}
}

// Ten failed sign-ins from an address, then one per 6 s; while it waits, even the right token
// is refused, with Retry-After and a page that says when to try again.
func TestFailedSignInsAreLimited(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	_, base := newDashboard(t, Config{Token: token, Clock: clock})
	for i := range 10 {
		if code, _ := signIn(t, base, "guess"); code != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d: %d, want 401", i+1, code)
		}
	}
	resp, err := browser(t).PostForm(base+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "6" || !strings.Contains(string(body), "try again in 6 s") {
		t.Fatalf("the right token after 10 failures: %d Retry-After %q\n%s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			t.Fatal("a session was made while the address waits")
		}
	}
	clock.Advance(6 * time.Second)
	if code, c := signIn(t, base, token); code != http.StatusSeeOther || c == nil {
		t.Fatalf("the right token 6 s later: %d", code)
	}
}

// Without sign-in the dashboard answers only Host names no web page can point at it.
func TestNoAuthDashboardServesOnlyLoopbackAndAllowedHosts(t *testing.T) {
	d, _ := newDashboard(t, Config{NoAuth: true, AllowedHosts: []string{"jobs.internal:8080"}})
	send := func(method, path, host string) int {
		r := httptest.NewRequest(method, path, nil)
		r.Host = host
		w := httptest.NewRecorder()
		d.ServeHTTP(w, r)
		return w.Code
	}
	paused := func() bool {
		stats, err := d.client.QueueStats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stats {
			if q.Queue == "default" && q.Paused {
				return true
			}
		}
		return false
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "jobs.internal:9090", "localhost.evil.example"} {
		if code := send("GET", "/schedules", host); code != http.StatusMisdirectedRequest {
			t.Errorf("GET with Host %q: %d, want 421", host, code)
		}
		if code := send("POST", "/queues/default/pause", host); code != http.StatusMisdirectedRequest {
			t.Errorf("pause with Host %q: %d, want 421", host, code)
		}
	}
	if paused() {
		t.Fatal("a request under a foreign Host paused the queue")
	}
	for _, host := range []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "jobs.internal:8080"} {
		if code := send("GET", "/schedules", host); code != http.StatusOK {
			t.Errorf("GET with Host %q: %d, want 200", host, code)
		}
	}
	if code := send("POST", "/queues/default/pause", "localhost:8080"); code != http.StatusSeeOther || !paused() {
		t.Fatalf("pause with Host localhost: %d, paused %v", code, paused())
	}
	if _, err := New(Config{Client: d.client, NoAuth: true, Token: token}); err == nil {
		t.Error("New with a token and NoAuth succeeded")
	}
}
