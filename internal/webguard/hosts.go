package webguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Hosts decides which Host headers a server without a token answers. A page on any web site can
// make its visitor's browser send requests to a name the site controls; by pointing that name's
// DNS at 127.0.0.1 (DNS rebinding) it reaches a server on the visitor's own machine as if it
// were the site, and reads the answers. The browser still sends the site's name as Host, so
// answering only names that no outsider can point anywhere closes that door:
//
//   - localhost and every *.localhost name, which browsers resolve to loopback themselves and
//     no DNS registry delegates (RFC 6761);
//   - IP addresses in 127.0.0.0/8 and ::1, and the address the request arrived on: an address
//     is not a name, so nothing rebinds it;
//   - the names and addresses the operator allowed (an entry with a port matches only that
//     port; one without matches any).
//
// A server with a token needs none of this: a rebinding page does not have the token, and the
// dashboard's cookie belongs to the real origin, not the attacker's name.
type Hosts struct {
	names map[string]bool // allowed host, lower case, without port
	exact map[string]bool // allowed host:port, lower case
}

// NewHosts returns the Hosts that also allows each of allowed: "name", "name:port", an IP
// address, or "[ipv6]:port".
func NewHosts(allowed []string) (*Hosts, error) {
	h := &Hosts{names: map[string]bool{}, exact: map[string]bool{}}
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" || strings.ContainsAny(a, "/ \t") || strings.Contains(a, "://") {
			return nil, fmt.Errorf("allowed host %q: give a host name or address, optionally with :port, not a URL", a)
		}
		if host, port, err := net.SplitHostPort(a); err == nil {
			if host == "" || port == "" {
				return nil, fmt.Errorf("allowed host %q: give a host name or address, optionally with :port", a)
			}
			h.exact[canonical(host)+":"+port] = true
			continue
		}
		h.names[canonical(a)] = true
	}
	return h, nil
}

// Allowed reports whether r's Host is one a server without a token may answer.
func (h *Hosts) Allowed(r *http.Request) bool {
	host, port := splitHost(r.Host)
	switch {
	case host == "":
		// Browsers always send Host; a request without one is not a rebinding page's.
		return false
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true
	case h.names[host] || (port != "" && h.exact[host+":"+port]):
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil {
		return false
	}
	bound, err := netip.ParseAddrPort(local.String())
	return err == nil && bound.Addr().Unmap() == ip
}

// Refusal is the message a refused request gets: what happened and how to let the name in.
func Refusal(r *http.Request, flag string) string {
	return fmt.Sprintf("Host %q is not served: without a token only localhost, loopback addresses and the server's own address are, "+
		"so that a web page cannot reach this server through DNS rebinding; to serve this name, allow it (%s)", r.Host, flag)
}

// splitHost returns host, lower case, without brackets or a final dot, and its port if any.
func splitHost(hostport string) (host, port string) {
	hostport = strings.ToLower(hostport)
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return canonical(h), p
	}
	return canonical(hostport), ""
}

// canonical strips an IPv6 literal's brackets and a name's final dot ("localhost." is
// localhost), so that each host has one spelling.
func canonical(host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(host, ".")
}
