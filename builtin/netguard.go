package builtin

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// netGuard keeps the http kind off internal addresses: whoever can insert a job must not be able
// to make the node call its own admin ports, the private network behind it or the cloud metadata
// service (169.254.169.254), which hands out credentials. It judges the address actually being
// connected, after DNS, so neither a name that resolves inside nor a rebinding DNS answer nor a
// redirect gets past it. Config.HTTPAllow opens what the operator wants reached.
type netGuard struct {
	nets  []netip.Prefix  // addresses opened whatever the host
	hosts map[string]bool // URL hosts (lower case) whose addresses are all opened
}

// CheckHTTPAllow reports whether every entry of Config.HTTPAllow is usable: a CIDR, an IP or a
// host name without port or wildcard. Register panics on a bad entry, because a node that
// silently ignores its operator's allow-list refuses what it was told to open; a command that
// takes the entries from its flags checks them here first.
func CheckHTTPAllow(allow []string) error {
	_, err := newNetGuard(allow)
	return err
}

func newNetGuard(allow []string) (*netGuard, error) {
	g := &netGuard{hosts: map[string]bool{}}
	for _, e := range allow {
		p, err := parseAllowEntry(e)
		switch {
		case err != nil:
			return nil, fmt.Errorf("http allow entry %q: %w", e, err)
		case p.IsValid():
			g.nets = append(g.nets, p)
		default:
			g.hosts[strings.ToLower(e)] = true
		}
	}
	return g, nil
}

// parseAllowEntry returns the prefix an entry opens, or no prefix for a host name.
func parseAllowEntry(e string) (netip.Prefix, error) {
	if strings.Contains(e, "://") {
		return netip.Prefix{}, fmt.Errorf("give a host, not a URL")
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, fmt.Errorf("an IPv4-mapped prefix must be /96 or longer")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")); err == nil {
		ip = canonicalIP(ip)
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	switch {
	case e == "":
		return netip.Prefix{}, fmt.Errorf("empty")
	case strings.Contains(e, "*"):
		return netip.Prefix{}, fmt.Errorf("wildcards are not supported; name each host, or give a CIDR")
	case strings.Contains(e, ":"):
		return netip.Prefix{}, fmt.Errorf("give a host without a port")
	case strings.ContainsAny(e, " \t\r\n@?#"):
		return netip.Prefix{}, fmt.Errorf("not a CIDR, an IP or a host name")
	}
	return netip.Prefix{}, nil
}

// canonicalIP drops what would hide an address from prefix matching: netip never matches a zoned
// address, nor an IPv4-mapped IPv6 one against an IPv4 prefix, while connecting to
// ::ffff:127.0.0.1 or fe80::1%eth0 reaches loopback or link-local all the same.
func canonicalIP(ip netip.Addr) netip.Addr { return ip.WithZone("").Unmap() }

// internalNets are the addresses refused unless allowed, with what the error calls them.
var internalNets = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"}, // connecting to 0.0.0.0 reaches the node itself
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"}, // the cloud metadata service is here
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// nat64 is the well-known NAT64 prefix: on a NAT64 network its addresses reach the IPv4 address
// they embed, which is judged instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// internalKind says what kind of internal address ip is, or "" for a public one.
func internalKind(ip netip.Addr) string {
	ip = canonicalIP(ip)
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, n := range internalNets {
		if n.prefix.Contains(ip) {
			return n.kind
		}
	}
	return ""
}

// refusedError is the guard's verdict on an address.
type refusedError struct {
	addr string
	kind string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("address %s is %s; rota refuses internal addresses unless allowed (--http-allow)", e.addr, e.kind)
}

// check judges address, an ip:port about to be connected.
func (g *netGuard) check(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Not an IP: the dialer always passes one, so refuse what cannot be judged.
		return &refusedError{addr: address, kind: "not an IP address"}
	}
	kind := internalKind(ap.Addr())
	if kind == "" {
		return nil
	}
	ip := canonicalIP(ap.Addr())
	for _, p := range g.nets {
		if p.Contains(ip) {
			return nil
		}
	}
	return &refusedError{addr: ap.Addr().String(), kind: kind}
}

// dialContext returns the transport's dial function. A request whose URL host is allowed by name
// dials without the check; any other dial is judged in Control, which runs after DNS and before
// the connection is attempted, so a refused address is never sent a packet. The transport passes
// the URL's host:port (there is no proxy), so each redirect hop is judged by its own host.
func (g *netGuard) dialContext() func(ctx context.Context, network, addr string) (net.Conn, error) {
	// The timeouts are those of http.DefaultTransport.
	open := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	guarded := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			return g.check(address)
		},
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && g.hosts[strings.ToLower(host)] {
			return open.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}
