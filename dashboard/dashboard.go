package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// cookieName holds the browser's proof that it signed in.
const cookieName = "rota_session"

// Config configures New.
type Config struct {
	// Client is what the dashboard reads and changes through. Required.
	Client *rota.Client
	// Node, when set, is the node whose attempts the throughput chart counts.
	Node *rota.Node
	// Token is what signing in takes: the API token. Required unless NoAuth is set.
	Token  string
	NoAuth bool
	// Logger receives failures that are not the user's. Defaults to slog.Default().
	Logger *slog.Logger
	// Clock defaults to the real clock.
	Clock clockwork.Clock
}

// Dashboard is the dashboard's http.Handler. Close it when done, to stop counting the node's
// events.
type Dashboard struct {
	client     *rota.Client
	logger     *slog.Logger
	clock      clockwork.Clock
	noAuth     bool
	token      []byte
	session    string // the cookie value a signed-in browser holds
	pages      map[string]*template.Template
	handler    http.Handler
	throughput *throughput // nil without a node
	stop       context.CancelFunc
}

// New builds the dashboard; see Config.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil {
		return nil, errors.New("dashboard: Config.Client is required")
	}
	if cfg.Token == "" && !cfg.NoAuth {
		return nil, errors.New("dashboard: set Config.Token, or Config.NoAuth to serve without signing in")
	}
	d := &Dashboard{client: cfg.Client, logger: cfg.Logger, clock: cfg.Clock, noAuth: cfg.NoAuth, token: []byte(cfg.Token)}
	if d.logger == nil {
		d.logger = slog.Default()
	}
	if d.clock == nil {
		d.clock = clockwork.NewRealClock()
	}
	// The session cookie is a MAC of a fixed text under the token: nothing to store on the
	// server, and a new token invalidates every cookie made with the old one.
	mac := hmac.New(sha256.New, d.token)
	mac.Write([]byte("rota dashboard session"))
	d.session = hex.EncodeToString(mac.Sum(nil))
	var err error
	if d.pages, err = parsePages(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	if cfg.Node != nil {
		d.throughput = newThroughput(d.clock)
		events, unsubscribe := cfg.Node.Subscribe(4096)
		context.AfterFunc(ctx, unsubscribe)
		go d.throughput.run(ctx, events)
	}
	d.routes()
	return d, nil
}

// Close stops counting the node's events.
func (d *Dashboard) Close() { d.stop() }

func (d *Dashboard) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", http.FileServerFS(staticFiles))
	m.HandleFunc("GET /login", d.loginPage)
	m.HandleFunc("POST /login", d.login)
	m.HandleFunc("POST /logout", d.logout)
	m.Handle("GET /{$}", d.signedIn(d.overview))
	m.Handle("GET /jobs", d.signedIn(d.jobs))
	m.Handle("GET /jobs/{id}", d.signedIn(d.job))
	m.Handle("POST /jobs/{id}/cancel", d.signedIn(d.cancelJob))
	m.Handle("POST /jobs/{id}/retry", d.signedIn(d.retryJob))
	m.Handle("POST /queues/{name}/pause", d.signedIn(d.pauseQueue))
	m.Handle("POST /queues/{name}/resume", d.signedIn(d.resumeQueue))
	m.Handle("GET /schedules", d.signedIn(d.schedules))
	m.Handle("POST /schedules/{name}/pause", d.signedIn(d.pauseSchedule))
	m.Handle("POST /schedules/{name}/resume", d.signedIn(d.resumeSchedule))
	// Every form, signing in and out included, must come from a page of this site: the browser
	// says where a request comes from (Sec-Fetch-Site, or Origin against Host).
	d.handler = http.NewCrossOriginProtection().Handler(m)
}

// ServeHTTP serves the dashboard's pages, with headers that keep them out of frames and keep
// them from loading anything from elsewhere.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
			if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(d.session)) != 1 {
				if r.Method != http.MethodGet {
					http.Error(w, "sign in first", http.StatusUnauthorized)
					return
				}
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
		}
		h(w, r)
	})
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "login", map[string]any{"Next": safeNext(r.URL.Query().Get("next")), "Failed": false})
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := safeNext(r.PostFormValue("next"))
	a, b := sha256.Sum256([]byte(r.PostFormValue("token"))), sha256.Sum256(d.token)
	if d.noAuth || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		d.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Next": next, "Failed": true})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: d.session, Path: "/", HttpOnly: true, Secure: secure(r),
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
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
