package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/webguard"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// cookieName holds the id of the browser's session.
const cookieName = "rota_session"

// Config configures New.
type Config struct {
	// Client is what the dashboard reads and changes through. Required.
	Client *rota.Client
	// Token is what signing in takes: the API token. Required unless NoAuth is set.
	Token string
	// NoAuth serves every page without signing in, for a listener only trusted people can
	// reach. Requests must then name the server by a loopback name or address, its own
	// address, or one of AllowedHosts: anything else may be a web page that reached it by DNS
	// rebinding.
	NoAuth bool
	// AllowedHosts are the further Host names (or addresses) served with NoAuth: "name" for
	// any port, "name:port" for one. Not used with a token.
	AllowedHosts []string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the client that failed
	// sign-ins are counted against. By default that is the connection's peer.
	TrustedProxies []netip.Prefix
	// SessionTTL is how long a sign-in lasts. Defaults to SessionTTLDefault.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept at once. Defaults to SessionsMaxDefault.
	MaxSessions int
	// Logger receives failures that are not the user's. Defaults to slog.Default().
	Logger *slog.Logger
	// Clock times sessions and the limit on failed sign-ins. Defaults to the real clock.
	Clock clockwork.Clock
}

// Dashboard is the dashboard's http.Handler.
type Dashboard struct {
	client   *rota.Client
	logger   *slog.Logger
	clock    clockwork.Clock
	noAuth   bool
	token    []byte
	sessions *sessions
	limit    *webguard.Limiter // failed sign-ins per client
	trusted  []netip.Prefix
	hosts    *webguard.Hosts
	pages    map[string]*template.Template
	handler  http.Handler
}

// New builds the dashboard; see Config.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil {
		return nil, errors.New("dashboard: Config.Client is required")
	}
	if cfg.Token == "" && !cfg.NoAuth {
		return nil, errors.New("dashboard: set Config.Token, or Config.NoAuth to serve without signing in")
	}
	if cfg.Token != "" && cfg.NoAuth {
		return nil, errors.New("dashboard: Config.Token and Config.NoAuth are both set; set one")
	}
	hosts, err := webguard.NewHosts(cfg.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("dashboard: Config.AllowedHosts: %w", err)
	}
	d := &Dashboard{client: cfg.Client, logger: cfg.Logger, clock: cfg.Clock, noAuth: cfg.NoAuth, token: []byte(cfg.Token),
		trusted: cfg.TrustedProxies, hosts: hosts}
	if d.logger == nil {
		d.logger = slog.Default()
	}
	if d.clock == nil {
		d.clock = clockwork.NewRealClock()
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = SessionTTLDefault
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = SessionsMaxDefault
	}
	d.sessions = newSessions(d.clock, cfg.SessionTTL, cfg.MaxSessions)
	d.limit = webguard.NewLimiter(d.clock, 0, 0, 0)
	if d.pages, err = parsePages(); err != nil {
		return nil, err
	}
	d.routes()
	return d, nil
}

func (d *Dashboard) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", http.FileServerFS(staticFiles))
	m.HandleFunc("GET /login", d.loginPage)
	m.HandleFunc("POST /login", d.login)
	m.HandleFunc("POST /logout", d.logout)
	m.Handle("GET /{$}", d.signedIn(d.overview))
	m.Handle("GET /jobs", d.signedIn(d.jobs))
	m.Handle("GET /jobs/find", d.signedIn(d.find))
	m.Handle("GET /jobs/{id}", d.signedIn(d.job))
	m.Handle("POST /jobs/{id}/cancel", d.signedIn(d.cancelJob))
	m.Handle("POST /jobs/{id}/retry", d.signedIn(d.retryJob))
	m.Handle("POST /jobs/bulk", d.signedIn(d.bulk))
	m.Handle("POST /queues/{name}/pause", d.signedIn(d.pauseQueue))
	m.Handle("POST /queues/{name}/resume", d.signedIn(d.resumeQueue))
	m.Handle("GET /workflows", d.signedIn(d.workflows))
	m.Handle("GET /workflows/{id}", d.signedIn(d.workflow))
	m.Handle("POST /workflows/{id}/cancel", d.signedIn(d.cancelWorkflow))
	m.Handle("POST /workflows/{id}/retry", d.signedIn(d.retryWorkflow))
	m.Handle("GET /schedules", d.signedIn(d.schedules))
	m.Handle("GET /schedules/{name}", d.signedIn(d.schedule))
	m.Handle("POST /schedules/{name}/run", d.signedIn(d.runSchedule))
	m.Handle("POST /schedules/{name}/edit", d.signedIn(d.editSchedule))
	m.Handle("POST /schedules/{name}/remove", d.signedIn(d.removeSchedule))
	m.Handle("POST /schedules/{name}/pause", d.signedIn(d.pauseSchedule))
	m.Handle("POST /schedules/{name}/resume", d.signedIn(d.resumeSchedule))
	// Every form, signing in and out included, must come from a page of this site: the browser
	// says where a request comes from (Sec-Fetch-Site, or Origin against Host).
	d.handler = http.NewCrossOriginProtection().Handler(m)
}

// ServeHTTP serves the dashboard's pages, with headers that keep them out of frames and keep
// them from loading anything from elsewhere. Without sign-in, it serves only Host names no
// other site can point here (webguard.Hosts): a page the operator visits could otherwise reach
// the dashboard by DNS rebinding and cancel or retry jobs.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.noAuth && !d.hosts.Allowed(r) {
		http.Error(w, webguard.Refusal(r, "Config.AllowedHosts, rota serve --api-allow-host"), http.StatusMisdirectedRequest)
		return
	}
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "same-origin")
	d.handler.ServeHTTP(w, r)
}

// signedIn lets through browsers holding the session cookie, and sends the others to sign in.
func (d *Dashboard) signedIn(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.noAuth {
			c, err := r.Cookie(cookieName)
			if err != nil || !d.sessions.valid(c.Value) {
				if r.Method != http.MethodGet {
					http.Error(w, "sign in first", http.StatusUnauthorized)
					return
				}
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
		}
		// Every form the dashboard posts is small: a body past formMaxBytes is refused when read,
		// and a multipart one cannot spill files to disk.
		r.Body = http.MaxBytesReader(w, r.Body, formMaxBytes)
		// What a signed-in page shows (args, results, errors) often holds secrets: the browser
		// keeps none of it, for its back button or its cache to show after sign-out.
		w.Header().Set("Cache-Control", "no-store")
		h(w, r)
	})
}

// formMaxBytes bounds what a posted form may hold: a bulk action's thousand checked ids are a
// fifth of it.
const formMaxBytes = 64 << 10

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "login", map[string]any{"Next": safeNext(r.URL.Query().Get("next")), "Failed": false})
}

// login signs a browser in with the token, or counts a failure against its client: after
// webguard.FailBurstDefault failures in a row, one more try per webguard.FailEveryDefault.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, formMaxBytes)
	next := safeNext(r.PostFormValue("next"))
	if d.noAuth {
		d.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Next": next, "Failed": true})
		return
	}
	client := webguard.ClientKey(r, d.trusted)
	if wait := d.limit.Wait(client); wait > 0 {
		secs := webguard.RetryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		d.render(w, r, http.StatusTooManyRequests, "login", map[string]any{"Next": next, "Wait": secs})
		return
	}
	a, b := sha256.Sum256([]byte(r.PostFormValue("token"))), sha256.Sum256(d.token)
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		d.limit.Fail(client)
		d.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Next": next, "Failed": true})
		return
	}
	value, expires := d.sessions.create()
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: value, Path: "/", HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode,
		// The browser forgets the cookie when the session ends anyway.
		Expires: expires, MaxAge: int(expires.Sub(d.clock.Now()).Seconds()),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the browser's session on the server, so that its cookie, wherever else it was
// copied, no longer signs anyone in.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		d.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure(r),
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// secure reports whether the browser reached the dashboard over TLS, here or at a proxy that
// says so (X-Forwarded-Proto): the cookie is then sent over TLS only. Believing the header can
// only make the cookie stricter.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// safeNext keeps a redirect after signing in on this site: a path, never another host. Browsers
// drop tabs and newlines from URLs and read a backslash as a slash, so "/\t/evil" or "/\\evil"
// would lead elsewhere: such bytes are refused anywhere in it.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	return next
}
