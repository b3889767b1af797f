package webguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// hostRequest is a request with Host host that arrived on local.
func hostRequest(host, local string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = host
	if local != "" {
		addr, err := net.ResolveTCPAddr("tcp", local)
		if err != nil {
			panic(err)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
	}
	return r
}

func TestHostsAllowLoopbackTheBoundAddressAndTheAllowedOnly(t *testing.T) {
	h, err := NewHosts([]string{"Jobs.Internal", "box:8080", "10.0.0.9"})
	if err != nil {
		t.Fatal(err)
	}
	const local = "192.168.1.5:8080"
	for host, want := range map[string]bool{
		"localhost": true, "localhost:8080": true, "LOCALHOST": true, "localhost.:8080": true, "app.localhost:1": true,
		"127.0.0.1": true, "127.0.0.1:8080": true, "127.8.9.1:80": true, "[::1]:8080": true, "[::1]": true,
		"192.168.1.5": true, "192.168.1.5:8080": true, // the address the request came in on
		"jobs.internal": true, "jobs.internal:9999": true, "box:8080": true, "10.0.0.9:1": true,
		// A rebinding page's own name, and names that only look local.
		"evil.example": false, "evil.example:8080": false, "localhost.evil.example": false, "evillocalhost": false,
		"box": false, "box:8081": false, "192.168.1.6:8080": false, "127.1": false, "": false, "[::2]:8080": false,
	} {
		if got := h.Allowed(hostRequest(host, local)); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
	// Without the connection's address (a handler called directly), only the names are known.
	if h.Allowed(hostRequest("192.168.1.5", "")) {
		t.Error("an address allowed with no connection to compare it with")
	}
}

func TestNewHostsRefusesURLs(t *testing.T) {
	for _, bad := range []string{"http://jobs.internal", "jobs.internal/x", "", ":8080", "a b"} {
		if _, err := NewHosts([]string{bad}); err == nil {
			t.Errorf("NewHosts(%q) succeeded", bad)
		}
	}
}
