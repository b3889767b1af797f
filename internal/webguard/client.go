package webguard

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientKey names the client a request counts against: its address, with an IPv6 address
// reduced to its /64, because one host or one customer of a provider usually holds a whole /64
// and could otherwise spread its guesses over 2^64 addresses.
//
// The address is the connection's peer. X-Forwarded-For is believed only when that peer is one
// of trusted (a reverse proxy the operator runs): anyone can send the header, and believing it
// from anyone lets a guesser pick a new address for every guess. The address taken is the last
// one in the header that is not itself a trusted proxy, the first hop a trusted proxy saw.
func ClientKey(r *http.Request, trusted []netip.Prefix) string {
	addr := peer(r)
	if addr.IsValid() && isTrusted(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a hop that is not an address: trust nothing before it
			}
			addr = hop.Unmap()
			if !isTrusted(addr, trusted) {
				break
			}
		}
	}
	if !addr.IsValid() {
		return r.RemoteAddr // not an IP (a Unix socket, a test): each peer name counts alone
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func peer(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}

func isTrusted(addr netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
