package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/httpapi"
)

// send calls h directly as a client at remote would, with Host host and Authorization auth
// (none when empty), and returns the status, the Retry-After header and the error code.
func send(t *testing.T, h http.Handler, remote, host, auth, method, path, body string) (int, string, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.RemoteAddr, r.Host = remote, host
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e apiError
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a JSON error: %v\n%s", method, path, w.Code, err, w.Body)
		}
	}
	return w.Code, w.Header().Get("Retry-After"), e.Code
}

// Without a token the API answers only Host names a web page cannot point at it (DNS
// rebinding): loopback ones, its own address, and the allowed.
func TestNoAuthServesOnlyLoopbackAndAllowedHosts(t *testing.T) {
	h, client := newHandler(t, httpapi.Config{NoAuth: true, AllowedHosts: []string{"jobs.internal"}})
	const enqueue = `{"kind":"greet"}`
	for _, host := range []string{"evil.example", "evil.example:8080", "localhost.evil.example", "192.0.2.1:8080", ""} {
		if code, _, errCode := send(t, h, "127.0.0.1:5000", host, "", "POST", "/v1/jobs", enqueue); code != http.StatusMisdirectedRequest || errCode != "host_not_allowed" {
			t.Errorf("Host %q: %d %q, want 421 host_not_allowed", host, code, errCode)
		}
	}
	if code, _, _ := send(t, h, "127.0.0.1:5000", "evil.example", "", "GET", "/v1/queues", ""); code != http.StatusMisdirectedRequest {
		t.Errorf("a read under a foreign Host: %d, want 421", code)
	}
	if jobs, _ := client.List(context.Background(), rota.ListParams{}); len(jobs) != 0 {
		t.Fatalf("%d jobs inserted under a foreign Host", len(jobs))
	}
	for _, host := range []string{"localhost:8080", "localhost", "127.0.0.1:8080", "[::1]:8080", "jobs.internal", "jobs.internal:443"} {
		if code, _, _ := send(t, h, "127.0.0.1:5000", host, "", "POST", "/v1/jobs", enqueue); code != http.StatusCreated {
			t.Errorf("Host %q: %d, want 201", host, code)
		}
	}
	// A token keeps a rebinding page out by itself: with one, any Host is served.
	withToken, _ := newHandler(t, httpapi.Config{Token: token})
	if code, _, _ := send(t, withToken, "127.0.0.1:5000", "jobs.example.com", "Bearer "+token, "GET", "/v1/queues", ""); code != http.StatusOK {
		t.Errorf("with a token, under a public name: %d, want 200", code)
	}
}

// The server's own address is served as Host without a token: an address is not a name that
// can be rebound, and it is what a browser sends for http://127.0.0.1:PORT/.
func TestNoAuthServesItsOwnAddressAsHost(t *testing.T) {
	s := newServerWith(t, httpapi.Config{NoAuth: true})
	var qs struct {
		Queues []json.RawMessage `json:"queues"`
	}
	if code := s.callAs(t, "", "GET", "/v1/queues", "", &qs); code != http.StatusOK {
		t.Fatalf("Host %s: %d", strings.TrimPrefix(s.url, "http://"), code)
	}
}

func TestNewRefusesTokenWithNoAuthAndBadAllowedHosts(t *testing.T) {
	s := newServer(t)
	if _, err := httpapi.New(httpapi.Config{Client: s.client, Token: token, NoAuth: true}); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("New with a token and NoAuth: %v", err)
	}
	if _, err := httpapi.New(httpapi.Config{Client: s.client, NoAuth: true, AllowedHosts: []string{"http://x"}}); err == nil || !strings.Contains(err.Error(), "AllowedHosts") {
		t.Errorf("New with a URL as allowed host: %v", err)
	}
}

// Ten wrong tokens from one address, then one every 6 s; while it waits, every request from
// it is refused, the right token included, and other addresses are not affected.
func TestWrongTokensAreLimitedPerClient(t *testing.T) {
	clock := clockwork.NewFakeClock()
	h, _ := newHandler(t, httpapi.Config{Token: token, Clock: clock})
	const guesser, other = "203.0.113.7:5000", "198.51.100.1:5000"
	for i := range 10 {
		if code, _, _ := send(t, h, guesser, "rota", "Bearer guess", "GET", "/v1/queues", ""); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, code)
		}
	}
	for _, auth := range []string{"Bearer guess", "Bearer " + token} {
		if code, retry, errCode := send(t, h, guesser, "rota", auth, "GET", "/v1/queues", ""); code != http.StatusTooManyRequests ||
			retry != "6" || errCode != "too_many_failures" {
			t.Fatalf("%q after 10 wrong: %d Retry-After %q %q, want 429 after 6", auth, code, retry, errCode)
		}
	}
	if code, _, _ := send(t, h, other, "rota", "Bearer "+token, "GET", "/v1/queues", ""); code != http.StatusOK {
		t.Fatalf("another address: %d, want 200", code)
	}
	clock.Advance(6 * time.Second)
	if code, _, _ := send(t, h, guesser, "rota", "Bearer "+token, "GET", "/v1/queues", ""); code != http.StatusOK {
		t.Fatalf("the right token 6 s later: %d, want 200", code)
	}
	if code, _, _ := send(t, h, guesser, "rota", "Bearer guess", "GET", "/v1/queues", ""); code != http.StatusUnauthorized {
		t.Fatalf("one more guess 6 s later: %d, want 401", code)
	}
	if code, retry, _ := send(t, h, guesser, "rota", "Bearer guess", "GET", "/v1/queues", ""); code != http.StatusTooManyRequests || retry != "6" {
		t.Fatalf("the guess after: %d Retry-After %q, want 429 after 6", code, retry)
	}
	// X-Forwarded-For does not make a new client out of an old one.
	r := httptest.NewRequest("GET", "/v1/queues", nil)
	r.RemoteAddr = guesser
	r.Header.Set("X-Forwarded-For", "192.0.2.99")
	r.Header.Set("Authorization", "Bearer guess")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("with a forged X-Forwarded-For: %d, want 429", w.Code)
	}
}

func TestShortTokenIsWarned(t *testing.T) {
	for tok, warned := range map[string]bool{"short-token": true, strings.Repeat("k", httpapi.TokenMinLength): false} {
		var log bytes.Buffer
		newHandler(t, httpapi.Config{Token: tok, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if got := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "token is short"); got != warned {
			t.Errorf("token of %d characters: warned %v, want %v\n%s", len(tok), got, warned, log.String())
		}
	}
}
