package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/rotahq/rota"
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
	// NoAuth serves without a token, for a listener only trusted callers can reach.
	NoAuth bool
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
	a := &api{client: cfg.Client, logger: cfg.Logger, waitMax: cfg.WaitMax, bodyMax: cfg.BodyMax}
	if a.logger == nil {
		a.logger = slog.Default()
	}
	if a.waitMax <= 0 {
		a.waitMax = WaitMaxDefault
	}
	if a.bodyMax <= 0 {
		a.bodyMax = BodyMaxDefault
	}
	v1 := http.NewServeMux()
	v1.HandleFunc("POST /v1/jobs", a.enqueue)
	v1.HandleFunc("POST /v1/jobs/batch", a.enqueueBatch)
	v1.HandleFunc("GET /v1/jobs", a.listJobs)
	v1.HandleFunc("GET /v1/jobs/{id}", a.getJob)
	v1.HandleFunc("POST /v1/jobs/{id}/cancel", a.cancelJob)
	v1.HandleFunc("POST /v1/jobs/{id}/retry", a.retryJob)
	v1.HandleFunc("GET /v1/jobs/{id}/wait", a.waitJob)
	v1.HandleFunc("GET /v1/queues", a.listQueues)
	v1.HandleFunc("POST /v1/queues/{name}/pause", a.pauseQueue)
	v1.HandleFunc("POST /v1/queues/{name}/resume", a.resumeQueue)
	v1.HandleFunc("GET /v1/schedules", a.listSchedules)
	v1.HandleFunc("GET /v1/schedules/{name}", a.getSchedule)
	v1.HandleFunc("PUT /v1/schedules/{name}", a.putSchedule)
	v1.HandleFunc("DELETE /v1/schedules/{name}", a.deleteSchedule)
	v1.HandleFunc("POST /v1/schedules/{name}/pause", a.pauseSchedule)
	v1.HandleFunc("POST /v1/schedules/{name}/resume", a.resumeSchedule)
	v1.HandleFunc("GET /v1/status", a.status)
	v1.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path)
	})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	var protected http.Handler = v1
	if !cfg.NoAuth {
		protected = requireToken(cfg.Token, v1)
	}
	mux.Handle("/", protected)
	// A browser page from another site may not POST here: without a token (NoAuth) such a page
	// could otherwise enqueue jobs, a text/plain body being one no browser asks leave to send.
	// Programs send neither Sec-Fetch-Site nor Origin and are not affected.
	return http.NewCrossOriginProtection().Handler(mux), nil
}

// requireToken lets through requests that carry token as a bearer token. The comparison takes
// the same time whatever the guess: both sides are hashed first, so neither the token's length
// nor its first wrong byte shows in the timing.
func requireToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(got))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong API token (Authorization: Bearer TOKEN)")
			return
		}
		next.ServeHTTP(w, r)
	})
}
