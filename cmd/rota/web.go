package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/dashboard"
	"github.com/rotahq/rota/httpapi"
	"github.com/rotahq/rota/internal/webguard"
)

// apiTokenEnv names the environment variable that holds the HTTP API's token, for process
// managers that pass secrets that way; --api-token-file reads it from a file instead.
const apiTokenEnv = "ROTA_API_TOKEN"

// apiToken returns the API token from --api-token-file, else from ROTA_API_TOKEN.
func apiToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--api-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("--api-token-file %s is empty", file)
		}
		return token, nil
	}
	// Trimmed as the file's is: a newline from the secret it came from is no part of a token
	// any client can send (header values lose surrounding whitespace).
	return strings.TrimSpace(os.Getenv(apiTokenEnv)), nil
}

// webOptions are what serve's flags say about the HTTP API and dashboard.
type webOptions struct {
	addr  string // --http-addr
	token string // $ROTA_API_TOKEN or --api-token-file
	// noAuth (--api-no-auth) serves without a token: only on a loopback address, and only to
	// requests whose Host is a loopback name or address, the bound address, or one of
	// allowedHosts (--api-allow-host).
	noAuth       bool
	allowedHosts []string
	// trustedProxies (--api-trusted-proxy) are the reverse proxies whose X-Forwarded-For names
	// the client failed tokens and sign-ins are counted against.
	trustedProxies []netip.Prefix
}

// serveWeb serves, on o.addr, the HTTP API under /v1/ and the dashboard at /, both through
// the node's client (so a job cancelled there stops at once when this node runs it) and both
// behind o.token. The returned function stops it: new requests are refused, waits answer with
// the job as it is, and other running requests get a few seconds to finish.
func serveWeb(node *rota.Node, o webOptions, logger *slog.Logger) (func(), error) {
	if err := checkWebAuth(o); err != nil {
		return nil, err
	}
	if len(o.allowedHosts) > 0 && !o.noAuth {
		logger.Warn("rota: --api-allow-host is for --api-no-auth; with a token every Host is served", "hosts", o.allowedHosts)
	}
	api, err := httpapi.New(httpapi.Config{Client: node.Client(), Token: o.token, NoAuth: o.noAuth, Logger: logger,
		AllowedHosts: o.allowedHosts, TrustedProxies: o.trustedProxies})
	if err != nil {
		return nil, err
	}
	dash, err := dashboard.New(dashboard.Config{Client: node.Client(), Token: o.token, NoAuth: o.noAuth, Logger: logger,
		AllowedHosts: o.allowedHosts, TrustedProxies: o.trustedProxies})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/healthz", api)
	mux.Handle("/", dash)
	// Requests' contexts end when the server stops, so that a wait answers at once then.
	base, stopRequests := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           mux,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A wait request blocks for up to httpapi.WaitMaxDefault before it answers.
		WriteTimeout: httpapi.WaitMaxDefault + 10*time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	bound, stopServer, err := startServer("--http-addr", o.addr, "HTTP API", srv, logger)
	if err != nil {
		stopRequests()
		return nil, err
	}
	if o.noAuth {
		logger.Warn("rota: the HTTP API and dashboard take requests without a token; anyone on this machine can run jobs", "addr", bound)
	}
	logger.Info("rota: HTTP API at http://" + bound + "/v1/, dashboard at http://" + bound + "/")
	return func() {
		stopRequests()
		stopServer()
	}, nil
}

// checkWebAuth refuses settings that would serve other than the operator thinks: no token
// without saying so, a token that --api-no-auth would ignore, and no token on an address other
// machines can reach.
func checkWebAuth(o webOptions) error {
	if o.token == "" && !o.noAuth {
		return fmt.Errorf("--http-addr needs an API token: set %s or --api-token-file (or --api-no-auth to serve without one)", apiTokenEnv)
	}
	if o.token != "" && o.noAuth {
		return fmt.Errorf("--api-no-auth and an API token (%s or --api-token-file) are both set: unset the token to serve without one, or drop --api-no-auth", apiTokenEnv)
	}
	if _, err := webguard.NewHosts(o.allowedHosts); err != nil {
		return fmt.Errorf("--api-allow-host: %w", err)
	}
	if o.noAuth {
		if err := checkLoopback(o.addr); err != nil {
			return fmt.Errorf("--api-no-auth serves only on a loopback address, such as 127.0.0.1:8080 or localhost:8080, "+
				"because without a token whoever reaches the address can run programs: --http-addr %s %w; set a token to serve there", o.addr, err)
		}
	}
	return nil
}

// checkLoopback returns why addr (host:port) may be reachable from other machines, or nil when
// every address it names is a loopback one. A name is resolved, as net.Listen would.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("is not host:port: %w", err)
	}
	if host == "" {
		return errors.New("listens on every interface")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !ip.Unmap().IsLoopback() {
			return fmt.Errorf("is not loopback (%s)", ip)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("does not resolve: %w", err)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return fmt.Errorf("resolves to %s, which is not loopback", ip)
		}
	}
	return nil
}

// parseTrustedProxies reads --api-trusted-proxy values: addresses ("10.0.0.1") or networks
// ("10.0.0.0/8").
func parseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("--api-trusted-proxy %q: give an IP address or a network such as 10.0.0.0/8", v)
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}
