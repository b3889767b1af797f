package builtin

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// httpMaxRedirects caps a redirect chain as Go's client does by default: ten requests in all, the
// job's own included.
const httpMaxRedirects = 10

// credentialHeaders are the headers a job sets for its URL's origin only.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"}

// checkRedirect stops a chain at httpMaxRedirects requests, and sends the job's credentials only to
// its URL's origin (scheme, host and port). Go's client keeps them for any port and scheme of the
// same domain, so a webhook on https://host could pass a job's token to http://host:8080, another
// service with its own owner, in clear text. Once a redirect has left the origin, the credentials
// stay off for the rest of the chain, even back at the origin: the way back was chosen elsewhere.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= httpMaxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	origin := via[0].URL
	left := !sameOrigin(origin, req.URL)
	for _, r := range via[1:] {
		left = left || !sameOrigin(origin, r.URL)
	}
	if left {
		for _, h := range credentialHeaders {
			req.Header.Del(h)
		}
	}
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port, the default port
// standing for itself.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
