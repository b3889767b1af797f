package builtin

import (
	"net/netip"
	"strings"
	"testing"
)

// Every kind of internal address is recognised, in each of its spellings; public ones are not.
// These tests judge addresses only: nothing is sent to them.
func TestNetGuardKinds(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":              "loopback",
		"127.0.0.2":              "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"10.0.0.1":               "private",
		"172.16.5.4":             "private",
		"192.168.1.1":            "private",
		"::ffff:10.1.2.3":        "private",
		"fc00::1":                "private",
		"fd12:3456::1":           "private",
		"169.254.169.254":        "link-local",
		"::ffff:169.254.169.254": "link-local",
		"64:ff9b::a9fe:a9fe":     "link-local", // 169.254.169.254 through NAT64
		"fe80::1":                "link-local",
		"fe80::1%eth0":           "link-local", // netip never matches a zoned address to a prefix
		"0.0.0.0":                "unspecified",
		"0.1.2.3":                "unspecified",
		"::":                     "unspecified",
		"::ffff:0.0.0.0":         "unspecified",
		"100.64.0.1":             "shared (CGNAT)",
		"100.127.255.254":        "shared (CGNAT)",
		"224.0.0.1":              "multicast",
		"239.255.255.250":        "multicast",
		"ff02::1":                "multicast",
		"255.255.255.255":        "broadcast",
		"240.0.0.1":              "reserved",
		"fec0::1":                "site-local",
		"8.8.8.8":                "",
		"1.1.1.1":                "",
		"100.128.0.1":            "",
		"172.32.0.1":             "",
		"::ffff:8.8.8.8":         "",
		"64:ff9b::808:808":       "",
		"2001:4860:4860::8888":   "",
	} {
		if got := internalKind(netip.MustParseAddr(addr)); got != want {
			t.Errorf("internalKind(%s) = %q, want %q", addr, got, want)
		}
	}
}

// check is what the dialer's Control runs on the resolved address: it refuses internal addresses
// unless an allowed CIDR or IP covers them.
func TestNetGuardCheck(t *testing.T) {
	g, err := newNetGuard([]string{"10.1.0.0/16", "192.168.7.7", "::ffff:172.16.0.0/108", "example.internal"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"169.254.169.254:80":      "address 169.254.169.254 is link-local; rota refuses internal addresses unless allowed (--http-allow)",
		"10.0.0.1:443":            "address 10.0.0.1 is private",
		"[::ffff:10.0.0.1]:443":   "address ::ffff:10.0.0.1 is private",
		"127.0.0.1:8080":          "is loopback",
		"[::1]:8080":              "is loopback",
		"192.168.7.8:80":          "is private",
		"100.64.0.1:80":           "is shared (CGNAT)",
		"10.1.2.3:80":             "",
		"[::ffff:10.1.2.3]:80":    "",
		"192.168.7.7:80":          "",
		"172.16.1.1:80":           "",
		"8.8.8.8:53":              "",
		"[2001:db8::1]:80":        "",
		"example.internal:80":     "not an IP address", // by then the name is resolved; names are opened before
		"[fe80::1%eth0]:80":       "is link-local",
		"255.255.255.255:80":      "is broadcast",
		"[64:ff9b::a00:1]:80":     "is private",
		"[::ffff:127.0.0.1]:8080": "address ::ffff:127.0.0.1 is loopback",
	} {
		err := g.check(addr)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("check(%s) = %v, want %q", addr, err, want)
		}
	}
	if !g.hosts["example.internal"] || len(g.nets) != 3 {
		t.Errorf("guard = %+v", g)
	}
}

func TestCheckHTTPAllow(t *testing.T) {
	if err := CheckHTTPAllow([]string{"10.0.0.0/8", "10.0.0.1/8", "::1", "[::1]", "fd00::/8", "localhost", "Hooks.Example.COM"}); err != nil {
		t.Fatal(err)
	}
	for entry, want := range map[string]string{
		"10.0.0.0/33":        "prefix length out of range",
		"":                   "empty",
		"*.example.com":      "wildcards are not supported",
		"example.com:8080":   "give a host without a port",
		"http://example.com": "give a host, not a URL",
		"a b":                "not a CIDR, an IP or a host name",
		"::ffff:10.0.0.0/80": "IPv4-mapped prefix must be /96 or longer",
	} {
		err := CheckHTTPAllow([]string{"127.0.0.1", entry})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `http allow entry "`+entry+`"`) {
			t.Errorf("CheckHTTPAllow(%q) = %v, want an error containing %q", entry, err, want)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Config.HTTPAllow") {
			t.Errorf("newHTTPWorker with a bad entry: recovered %v, want a panic", r)
		}
	}()
	newHTTPWorker(Config{HTTPAllow: []string{"10.0.0.0/33"}})
}
