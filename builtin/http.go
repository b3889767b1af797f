package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/rotahq/rota"
)

// HTTPTimeoutDefault bounds a request whose job names no timeout: a webhook that takes longer is
// usually down, and the retry comes soon enough.
const HTTPTimeoutDefault = 10 * time.Second

// HTTPArgs are the args of an http job: send one request; a 2xx answer completes the job.
type HTTPArgs struct {
	// Method defaults to GET, or POST when there is a body.
	Method string `json:"method,omitempty"`
	URL    string `json:"url"`
	// Headers are sent with the request. Authorization, Proxy-Authorization and Cookie go only to
	// the URL's origin: a redirect to another scheme, host or port gets the others.
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// Timeout bounds the whole exchange, body included. Defaults to HTTPTimeoutDefault.
	Timeout Duration `json:"timeout,omitzero"`
	// MaxResponseBytes is how much of the response body is kept. Defaults to OutputBytesDefault;
	// at most OutputBytesMax.
	MaxResponseBytes int `json:"max_response_bytes,omitempty"`
}

// Kind returns "http".
func (HTTPArgs) Kind() string { return KindHTTP }

// UnmarshalJSON refuses unknown fields.
func (a *HTTPArgs) UnmarshalJSON(b []byte) error {
	type plain HTTPArgs
	return decodeStrict(b, (*plain)(a))
}

// HTTPResult is the result of an http job that got a 2xx answer.
type HTTPResult struct {
	Status int `json:"status"`
	// Headers holds the response headers; repeated ones are joined with ", ".
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	// Truncated says the body was longer than what was kept.
	Truncated bool `json:"truncated"`
	// HeadersTruncated says some headers were left out, largest first, so that the result fits
	// the node's result limit (Config.MaxResultBytes): the request succeeded, and a result too
	// large to record would have it sent again.
	HeadersTruncated bool `json:"headers_truncated,omitempty"`
}

type httpWorker struct {
	client    *http.Client
	maxResult int
}

// newHTTPWorker builds the client that sends the jobs' requests. The default one refuses internal
// addresses (netGuard) and ignores HTTP_PROXY and the like: through a proxy, the guard would judge
// the proxy's address instead of the target's, and the proxy would reach internal addresses for
// any job. A Config.HTTPClient is used as given, with its own transport, proxy and address
// policy (the guard and HTTPAllow do not apply to it); only when it has no CheckRedirect does it
// get the default one's, which keeps the job's credentials to its URL's origin. It panics on a bad
// HTTPAllow entry (see CheckHTTPAllow).
func newHTTPWorker(cfg Config) *httpWorker {
	guard, err := newNetGuard(cfg.HTTPAllow)
	if err != nil {
		panic(fmt.Sprintf("builtin: Config.HTTPAllow: %v", err))
	}
	var c *http.Client
	if cfg.HTTPClient != nil {
		given := *cfg.HTTPClient
		if given.CheckRedirect == nil {
			given.CheckRedirect = checkRedirect
		}
		c = &given
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = guard.dialContext()
		c = &http.Client{Transport: t, CheckRedirect: checkRedirect}
	}
	return &httpWorker{client: c, maxResult: cfg.MaxResultBytes}
}

// Work sends the job's request and records the response as the result.
func (w *httpWorker) Work(ctx context.Context, job *rota.Job[HTTPArgs]) error {
	res, err := w.runAs(ctx, job.Args, job.JobRow)
	if err != nil {
		return err
	}
	return job.SetResult(res)
}

// request checks the args and builds the request they describe, without a context.
func (a *HTTPArgs) request() (*http.Request, error) {
	if _, err := a.Timeout.orDefault(HTTPTimeoutDefault); err != nil {
		return nil, fmt.Errorf("http args: %w", err)
	}
	if _, err := outputLimit(a.MaxResponseBytes); err != nil {
		return nil, fmt.Errorf("http args: max_response_bytes: %w", err)
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, fmt.Errorf("http args: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http args: url %q: scheme must be http or https", a.URL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http args: url %q has no host", a.URL)
	}
	method := strings.ToUpper(a.Method)
	if method == "" {
		method = http.MethodGet
		if a.Body != "" {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, u.String(), strings.NewReader(a.Body))
	if err != nil {
		return nil, fmt.Errorf("http args: %w", err)
	}
	for k, v := range a.Headers {
		if err := checkHeader(k, v); err != nil {
			return nil, fmt.Errorf("http args: %w", err)
		}
		req.Header.Set(k, v)
	}
	// The client sends req.Host, never a Host header.
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
		req.Header.Del("Host")
	}
	return req, nil
}

// run sends the request. Args that can never work (a bad URL or method, a URL whose host is a
// refused address) end the job through rota.Cancel; a non-2xx answer, a redirect to a refused
// address or a network error fails the attempt, to be retried.
func (w *httpWorker) run(ctx context.Context, a HTTPArgs) (*HTTPResult, error) {
	return w.runAs(ctx, a, nil)
}

// runAs is run for job, whose id and attempt go with the request (identify), when it is not nil.
func (w *httpWorker) runAs(ctx context.Context, a HTTPArgs, job *rota.JobRow) (*HTTPResult, error) {
	req, err := a.request()
	if err != nil {
		return nil, rota.Cancel(err)
	}
	identify(req, a, job)
	timeout, _ := a.Timeout.orDefault(HTTPTimeoutDefault)
	limit, _ := outputLimit(a.MaxResponseBytes)
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The attempt's trace goes on to the webhook (a traceparent header), unless the args set one.
	if req.Header.Get("traceparent") == "" {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := w.client.Do(req.WithContext(reqCtx))
	if err != nil {
		if err := refusal(req, err); err != nil {
			return nil, err
		}
		return nil, w.transportError(ctx, reqCtx, req, timeout, err)
	}
	defer resp.Body.Close()
	body := newCapture(limit)
	// Read to the end (discarding past the limit) so the connection can be reused.
	if _, err := io.Copy(body, resp.Body); err != nil {
		return nil, w.transportError(ctx, reqCtx, req, timeout, fmt.Errorf("read response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("%s %s: HTTP %s", req.Method, redact(req.URL), resp.Status)
		if t := body.Tail(); t != "" {
			err = fmt.Errorf("%w; body: %s", err, t)
		}
		return nil, err
	}
	res := &HTTPResult{Status: resp.StatusCode, Headers: make(map[string]string, len(resp.Header))}
	for k, v := range resp.Header {
		res.Headers[k] = strings.Join(v, ", ")
	}
	fitHTTP(res, body, w.maxResult)
	return res, nil
}

func (w *httpWorker) transportError(ctx, reqCtx context.Context, req *http.Request, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s %s stopped: %w", req.Method, redact(req.URL), context.Cause(ctx))
	case errors.Is(reqCtx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s: timed out after %v", req.Method, redact(req.URL), timeout)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // url.Error repeats the method and the full URL, credentials included
	}
	return fmt.Errorf("%s %s: %w", req.Method, redact(req.URL), err)
}

// refusal returns the job's error when the guard refused an address of err's request, or nil.
// When the refused host is the job's own, no attempt can succeed and the job is cancelled; a
// redirect elsewhere fails the attempt, as other non-2xx answers do, since the server may change
// where it redirects.
func refusal(req *http.Request, err error) error {
	var refused *refusedError
	if !errors.As(err, &refused) {
		return nil
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if hop, perr := url.Parse(uerr.URL); perr == nil && hop.Host != req.URL.Host {
			return fmt.Errorf("%s %s: redirect to %s: %w", req.Method, redact(req.URL), redact(hop), refused)
		}
	}
	return rota.Cancel(fmt.Errorf("http args: %s %s: %w", req.Method, redact(req.URL), refused))
}

// redact hides a password in a URL, which job errors would otherwise show to anyone who can list
// jobs.
func redact(u *url.URL) string { return u.Redacted() }
