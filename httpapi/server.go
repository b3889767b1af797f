package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/webguard"
)

// Defaults for Config.
const (
	// WaitMaxDefault caps one wait request: long enough to cover most jobs a caller would wait
	// for, short enough for proxies that drop idle connections after a minute or two. A caller
	// waiting longer asks again.
	WaitMaxDefault = 60 * time.Second
	// BodyMaxDefault bounds a request body: a job's args may be up to the client's limit (1 MiB
	// by default), and the rest of the request is small.
	BodyMaxDefault = 2 << 20
)

// Config configures New.
type Config struct {
	// Client is what the API works through. Required.
	Client *rota.Client
	// Token is the secret every request must carry. Required unless NoAuth is set, so that an
	// open API is a decision, not an accident.
	Token string
	// NoAuth serves without a token, for a listener only trusted callers can reach. Requests
	// must then name the server by a loopback name or address, its own address, or one of
	// AllowedHosts: anything else may be a web page that reached it by DNS rebinding.
	NoAuth bool
	// AllowedHosts are the further Host names (or addresses) served with NoAuth: "name" for
	// any port, "name:port" for one. Without NoAuth it is not used: a token keeps out what a
	// Host check would.
	AllowedHosts []string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the client that failed
	// tokens are counted against. By default the connection's peer is that client, and the
	// header is ignored: anyone can send it.
	TrustedProxies []netip.Prefix
	// Clock times the limit on failed tokens. Defaults to the real clock.
	Clock clockwork.Clock
	// Logger receives failures that are not the caller's (500s). Defaults to slog.Default().
	Logger *slog.Logger
	// WaitMax caps the timeout of one wait request. Defaults to WaitMaxDefault.
	WaitMax time.Duration
	// BodyMax bounds a request body in bytes. Defaults to BodyMaxDefault.
	BodyMax int64
}

// api holds the handlers' shared state.
type api struct {
	client  *rota.Client
	logger  *slog.Logger
	waitMax time.Duration
	bodyMax int64
}

// New returns the API's handler. Mount it at the root of a server, or under a prefix with
// http.StripPrefix.
func New(cfg Config) (http.Handler, error) {
	if cfg.Client == nil {
		return nil, errors.New("httpapi: Config.Client is required")
	}
	if cfg.Token == "" && !cfg.NoAuth {
		return nil, errors.New("httpapi: set Config.Token, or Config.NoAuth to serve without authentication")
	}
	if cfg.Token != "" && cfg.NoAuth {
		// Either the token was meant to be asked for, or the operator thinks it is: both mean
		// the server would not do what its operator expects.
		return nil, errors.New("httpapi: Config.Token and Config.NoAuth are both set; set one")
	}
	hosts, err := webguard.NewHosts(cfg.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("httpapi: Config.AllowedHosts: %w", err)
	}
	a := &api{client: cfg.Client, logger: cfg.Logger, waitMax: cfg.WaitMax, bodyMax: cfg.BodyMax}
	if a.logger == nil {
		a.logger = slog.Default()
	}
	if !cfg.NoAuth && len(cfg.Token) < TokenMinLength {
		a.logger.Warn(fmt.Sprintf("rota: the API token is short; use at least %d random characters, such as `openssl rand -hex 32` prints",
			TokenMinLength), "length", len(cfg.Token))
	}
	if a.waitMax <= 0 {
		a.waitMax = WaitMaxDefault
	}
	if a.bodyMax <= 0 {
		a.bodyMax = BodyMaxDefault
	}
	v1 := http.NewServeMux()
	for _, r := range a.routes() {
		v1.HandleFunc(r.pattern, r.handler)
	}
	v1.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path)
	})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	// The API's description, without a token: it holds nothing of the server's.
	mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	})
	if cfg.NoAuth {
		mux.Handle("/", v1)
	} else {
		limit := webguard.NewLimiter(cfg.Clock, 0, 0, 0)
		mux.Handle("/", requireToken(cfg.Token, limit, cfg.TrustedProxies, v1))
	}
	// A browser page from another site may not POST here: without a token (NoAuth) such a page
	// could otherwise enqueue jobs, a text/plain body being one no browser asks leave to send.
	// Programs send neither Sec-Fetch-Site nor Origin and are not affected.
	h := http.NewCrossOriginProtection().Handler(mux)
	if cfg.NoAuth {
		h = requireHost(hosts, h)
	}
	return h, nil
}

// route is one operation of the API: a ServeMux pattern and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routes lists every operation under the token, as openapi.json describes them (a test holds
// the two together).
func (a *api) routes() []route {
	return []route{
		{"POST /v1/jobs", a.enqueue},
		{"POST /v1/jobs/batch", a.enqueueBatch},
		{"GET /v1/jobs", a.listJobs},
		{"GET /v1/jobs/{id}", a.getJob},
		{"POST /v1/jobs/{id}/cancel", a.cancelJob},
		{"POST /v1/jobs/{id}/retry", a.retryJob},
		{"DELETE /v1/jobs/{id}", a.deleteJob},
		{"GET /v1/jobs/{id}/wait", a.waitJob},
		{"POST /v1/workflows", a.insertWorkflow},
		{"GET /v1/workflows", a.listWorkflows},
		{"GET /v1/workflows/{id}", a.getWorkflow},
		{"POST /v1/workflows/{id}/cancel", a.cancelWorkflow},
		{"POST /v1/workflows/{id}/retry", a.retryWorkflow},
		{"POST /v1/batches", a.insertBatch},
		{"POST /v1/batches/{callback_id}/jobs", a.addToBatch},
		{"GET /v1/queues", a.listQueues},
		{"POST /v1/queues/{name}/pause", a.pauseQueue},
		{"POST /v1/queues/{name}/resume", a.resumeQueue},
		{"GET /v1/schedules", a.listSchedules},
		{"GET /v1/schedules/{name}", a.getSchedule},
		{"PUT /v1/schedules/{name}", a.putSchedule},
		{"DELETE /v1/schedules/{name}", a.deleteSchedule},
		{"POST /v1/schedules/{name}/pause", a.pauseSchedule},
		{"POST /v1/schedules/{name}/resume", a.resumeSchedule},
		{"GET /v1/status", a.status},
		{"GET /v1/stats", a.fleetStats},
	}
}
