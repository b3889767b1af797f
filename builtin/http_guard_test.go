package builtin

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rotahq/rota"
)

// These tests only ever connect to loopback addresses: the guard refuses before connecting, so
// no refused address is sent a packet, and a broken guard would reach a local test server.

// countingServer serves on ip (a loopback address) and counts the requests that reach it.
func countingServer(t *testing.T, ip string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &hits
}

func guardedWorker(allow ...string) *httpWorker {
	return newHTTPWorker(Config{MaxResultBytes: rota.MaxResultBytesDefault, HTTPAllow: allow})
}

// By default the node's own addresses are out of reach, however the URL spells them, and the
// job ends at once: no retry can reach them.
func TestHTTPRefusesLoopbackByDefault(t *testing.T) {
	srv, hits := countingServer(t, "127.0.0.1", nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	_, err := guardedWorker().run(t.Context(), HTTPArgs{URL: srv.URL + "/x"})
	want := "cancelled: http args: GET " + srv.URL + "/x: address 127.0.0.1 is loopback; rota refuses internal addresses unless allowed (--http-allow)"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant %s", err, want)
	}
	for url, kind := range map[string]string{
		"http://localhost:%d/":         "is loopback", // judged on the resolved address
		"http://[::ffff:127.0.0.1]:%d": "is loopback",
		"http://0.0.0.0:%d/":           "is unspecified",
		"http://[::]:%d/":              "is unspecified",
	} {
		url = fmt.Sprintf(url, port)
		_, err := guardedWorker().run(t.Context(), HTTPArgs{URL: url})
		if !isPermanent(err) || !strings.Contains(err.Error(), kind) {
			t.Errorf("%s: error = %v, want a permanent refusal saying %q", url, err, kind)
		}
	}
	// Allowing 127.0.0.1 opens that address, not the others of the node.
	_, err = guardedWorker("127.0.0.1").run(t.Context(), HTTPArgs{URL: "http://0.0.0.0:" + strconv.Itoa(port) + "/"})
	if !isPermanent(err) || !strings.Contains(err.Error(), "address 0.0.0.0 is unspecified") {
		t.Errorf("0.0.0.0 with 127.0.0.1 allowed: error = %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
}

// HTTPAllow opens an IP, a CIDR, or a host name (for that name only, not its address).
func TestHTTPAllowOpens(t *testing.T) {
	two, twoHits := countingServer(t, "127.0.0.2", nil)
	one, _ := countingServer(t, "127.0.0.1", nil)
	_, err := guardedWorker("127.0.0.1").run(t.Context(), HTTPArgs{URL: two.URL})
	if !isPermanent(err) || !strings.Contains(err.Error(), "address 127.0.0.2 is loopback") {
		t.Fatalf("127.0.0.2 with 127.0.0.1 allowed: error = %v", err)
	}
	if n := twoHits.Load(); n != 0 {
		t.Fatalf("a refused server got %d requests", n)
	}
	for _, tc := range []struct {
		allow []string
		url   string
	}{
		{[]string{"127.0.0.0/8"}, two.URL},
		{[]string{"127.0.0.0/8"}, one.URL},
		{[]string{"::ffff:127.0.0.2"}, two.URL},
		{[]string{"LocalHost"}, "http://localhost:" + strconv.Itoa(one.Listener.Addr().(*net.TCPAddr).Port)},
	} {
		if res, err := guardedWorker(tc.allow...).run(t.Context(), HTTPArgs{URL: tc.url}); err != nil || res.Status != 200 {
			t.Errorf("allow %q, %s: res = %+v, err = %v", tc.allow, tc.url, res, err)
		}
	}
	_, err = guardedWorker("localhost").run(t.Context(), HTTPArgs{URL: one.URL})
	if !isPermanent(err) || !strings.Contains(err.Error(), "address 127.0.0.1 is loopback") {
		t.Fatalf("127.0.0.1 with localhost allowed: error = %v", err)
	}
}

// Each redirect hop is judged again: an allowed server cannot send the request inside, unless the
// hop's host is allowed itself. The refusal fails the attempt, as the redirect may change.
func TestHTTPRedirectToRefusedAddress(t *testing.T) {
	inside, insideHits := countingServer(t, "127.0.0.1", nil)
	insidePort := strconv.Itoa(inside.Listener.Addr().(*net.TCPAddr).Port)
	hook, _ := countingServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	w := guardedWorker("127.0.0.2", "localhost")
	for _, to := range []string{inside.URL + "/admin", "http://0.0.0.0:" + insidePort + "/admin"} {
		_, err := w.run(t.Context(), HTTPArgs{URL: hook.URL + "/?to=" + to})
		if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "redirect to "+to+": address ") ||
			!strings.Contains(err.Error(), "rota refuses internal addresses") {
			t.Errorf("redirect to %s: error = %v, want a failed attempt refusing the redirect", to, err)
		}
	}
	if n := insideHits.Load(); n != 0 {
		t.Fatalf("the inside server got %d requests", n)
	}
	if res, err := w.run(t.Context(), HTTPArgs{URL: hook.URL + "/?to=http://localhost:" + insidePort + "/ok"}); err != nil || res.Status != 200 {
		t.Fatalf("redirect to an allowed host: res = %+v, err = %v", res, err)
	}
}
