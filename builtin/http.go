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
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
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
}

type httpWorker struct {
	client    *http.Client
	maxResult int
}

func newHTTPWorker(cfg Config) *httpWorker {
	c := cfg.HTTPClient
	if c == nil {
		c = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &httpWorker{client: c, maxResult: cfg.MaxResultBytes}
}

// Work sends the job's request and records the response as the result.
func (w *httpWorker) Work(ctx context.Context, job *rota.Job[HTTPArgs]) error {
	res, err := w.run(ctx, job.Args)
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
		req.Header.Set(k, v)
	}
	// The client sends req.Host, never a Host header.
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
		req.Header.Del("Host")
	}
	return req, nil
}

// run sends the request. Args that can never work (a bad URL or method) end the job through
// rota.Cancel; a non-2xx answer or a network error fails the attempt, to be retried.
func (w *httpWorker) run(ctx context.Context, a HTTPArgs) (*HTTPResult, error) {
	req, err := a.request()
	if err != nil {
		return nil, rota.Cancel(err)
	}
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
		return nil, w.transportError(ctx, reqCtx, req, timeout, err)
	}
	defer resp.Body.Close()
	body := newCapture(limit)
	// Read to the end (discarding past the limit) so the connection can be reused.
	if _, err := io.Copy(body, resp.Body); err != nil {
		return nil, w.transportError(ctx, reqCtx, req, timeout, fmt.Errorf("read response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, withTail(fmt.Errorf("%s %s: HTTP %s", req.Method, redact(req.URL), resp.Status), body)
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

// fitHTTP fills the body, trimming it until the encoded result is within max bytes.
func fitHTTP(res *HTTPResult, body *capture, max int) {
	for {
		res.Body, res.Truncated = body.String(), body.Truncated()
		if size := encodedSize(res); size <= max || res.Body == "" {
			return
		}
		body.shrink()
	}
}

// redact hides a password in a URL, which job errors would otherwise show to anyone who can list
// jobs.
func redact(u *url.URL) string { return u.Redacted() }
