package webguard

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientKeyTrustsForwardedForOnlyFromTrustedProxies(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		remote, xff string
		trusted     []netip.Prefix
		want        string
	}{
		{"203.0.113.7:5000", "", nil, "203.0.113.7"},
		{"203.0.113.7:5000", "198.51.100.1", nil, "203.0.113.7"},     // not believed by default
		{"203.0.113.7:5000", "198.51.100.1", proxies, "203.0.113.7"}, // nor from an untrusted peer
		{"10.1.2.3:5000", "198.51.100.1", proxies, "198.51.100.1"},
		// The client may put anything first; the last hop before the trusted proxies counts.
		{"10.1.2.3:5000", "1.1.1.1, 198.51.100.1, 10.9.9.9", proxies, "198.51.100.1"},
		{"10.1.2.3:5000", "garbage, 10.9.9.9", proxies, "10.9.9.9"},
		{"[2001:db8:1:2:3:4:5:6]:5000", "", nil, "2001:db8:1:2::/64"},
		{"[::ffff:203.0.113.7]:5000", "", nil, "203.0.113.7"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := ClientKey(r, tc.trusted); got != tc.want {
			t.Errorf("%s with X-Forwarded-For %q: %q, want %q", tc.remote, tc.xff, got, tc.want)
		}
	}
}
