package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/webguard"
)

// TokenMinLength is the shortest token New takes without a warning: 32 random characters are
// far beyond guessing, even by someone who gets around the limit on failed tokens (from many
// addresses, say), while a word or a short phrase is not.
const TokenMinLength = 32

// requireToken lets through requests that carry token as a bearer token. The comparison takes
// the same time whatever the guess: both sides are hashed first, so neither the token's length
// nor its first wrong byte shows in the timing.
//
// Wrong tokens are counted per client (webguard.Limiter): a client out of tries gets 429 with
// Retry-After for every request, even one with the right token, so that a guesser learns
// nothing from the answers until it may try again.
func requireToken(token string, limit *webguard.Limiter, trusted []netip.Prefix, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := webguard.ClientKey(r, trusted)
		if wait := limit.Wait(client); wait > 0 {
			secs := webguard.RetryAfter(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeError(w, http.StatusTooManyRequests, "too_many_failures",
				fmt.Sprintf("too many requests with a missing or wrong API token from %s; try again in %d s", client, secs))
			return
		}
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(got))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			limit.Fail(client)
			w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong API token (Authorization: Bearer TOKEN)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireHost serves, without a token, only requests whose Host no other site can have pointed
// here (see webguard.Hosts): a page the operator visits could otherwise reach the API by DNS
// rebinding and run programs through exec jobs. The answer is 421 Misdirected Request: this
// server does not serve that name.
func requireHost(hosts *webguard.Hosts, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allowed(r) {
			writeError(w, http.StatusMisdirectedRequest, "host_not_allowed", webguard.Refusal(r, "Config.AllowedHosts, rota serve --api-allow-host"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
