package builtin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/rotahq/rota"
)

// newTestHTTP returns a worker that may call the test servers, which listen on 127.0.0.1.
func newTestHTTP() *httpWorker {
	return newHTTPWorker(Config{MaxResultBytes: rota.MaxResultBytesDefault, HTTPAllow: []string{"127.0.0.1"}})
}

func TestHTTPSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPut || r.Header.Get("X-Token") != "t0k" || string(body) != `{"a":1}` {
			http.Error(w, "unexpected request "+r.Method+" "+string(body), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Reply", "yes")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "made it")
	}))
	defer srv.Close()
	res, err := newTestHTTP().run(t.Context(), HTTPArgs{Method: "put", URL: srv.URL + "/hook", Headers: map[string]string{"X-Token": "t0k"}, Body: `{"a":1}`})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusCreated || res.Body != "made it" || res.Headers["X-Reply"] != "yes" || res.Truncated {
		t.Fatalf("result = %+v", res)
	}
}

func TestHTTPDefaultMethod(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method)
	}))
	defer srv.Close()
	for body, want := range map[string]string{"": "GET", "x": "POST"} {
		res, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: srv.URL, Body: body})
		if err != nil || res.Body != want {
			t.Errorf("body %q: res = %+v, err = %v; want method %s", body, res, err, want)
		}
	}
}

func TestHTTPNon2xxFailsAttempt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database is down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: srv.URL})
	if err == nil || isPermanent(err) {
		t.Fatalf("error = %v, want a failed attempt to retry", err)
	}
	for _, want := range []string{"HTTP 503 Service Unavailable", "database is down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestHTTPBadURLIsPermanent(t *testing.T) {
	for _, u := range []string{"", "ftp://example.com/x", "http://", "://nope", "http://[::1"} {
		_, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: u})
		if !isPermanent(err) {
			t.Errorf("url %q: error = %v, want a permanent failure", u, err)
		}
	}
	if _, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: "http://localhost/", Method: "BAD METHOD"}); !isPermanent(err) {
		t.Errorf("bad method: error = %v, want a permanent failure", err)
	}
}

func TestHTTPTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answer never comes; the client gives up
	}))
	defer srv.Close()
	start := time.Now()
	_, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: srv.URL, Timeout: Duration(150 * time.Millisecond)})
	if err == nil || !strings.Contains(err.Error(), "timed out after 150ms") || isPermanent(err) {
		t.Fatalf("error = %v, want a timeout to retry", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v after a 150ms timeout", d)
	}
}

func TestHTTPTruncatesBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("z", 3<<20))
	}))
	defer srv.Close()
	res, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Body) != OutputBytesDefault || !res.Truncated {
		t.Fatalf("body is %d bytes, truncated=%v", len(res.Body), res.Truncated)
	}
	res, err = newTestHTTP().run(t.Context(), HTTPArgs{URL: srv.URL, MaxResponseBytes: 10})
	if err != nil || res.Body != "zzzzzzzzzz" || !res.Truncated {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
}

// Credentials in the URL never reach the job's recorded errors.
func TestHTTPErrorRedactsPassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)
	_, err := newTestHTTP().run(t.Context(), HTTPArgs{URL: u})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("error = %v", err)
	}
	_, err = newTestHTTP().run(t.Context(), HTTPArgs{URL: "http://user:s3cret@127.0.0.1:1/"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("connection error = %v", err)
	}
}

func TestHTTPArgsValidation(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"url":"http://x","body":"b","hedaers":{}}`, `unknown field "hedaers"`},
		{`{"url":"mailto:a@b"}`, "scheme must be http or https"},
		{`{"url":"http://x","timeout":"-1s"}`, "negative"},
		// A CR or LF would split the request; the transport would refuse it at every attempt.
		{`{"url":"http://x","headers":{"X-A":"a\r\nX-Injected: 1"}}`, `header "X-A": value contains the control character '\r'`},
		{`{"url":"http://x","headers":{"X-A":"a\nb"}}`, `control character '\n'`},
		{`{"url":"http://x","headers":{"X-A":"a\u0000b"}}`, `control character '\x00'`},
		{`{"url":"http://x","headers":{"X A":"b"}}`, `header name "X A" is not valid`},
		{`{"url":"http://x","headers":{"X-A:":"b"}}`, `header name "X-A:" is not valid`},
		{`{"url":"http://x","headers":{"":"b"}}`, "header name is empty"},
		{`{"url":"http://x","headers":{"Host":"a\r\nb"}}`, `header "Host"`},
	} {
		err := Validate(KindHTTP, []byte(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%s) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	// A tab and bytes beyond ASCII are allowed in a value, as HTTP allows them.
	if err := Validate(KindHTTP, []byte(`{"url":"http://x","headers":{"X-A":"a\tb é"}}`)); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// The webhook is called in the attempt's trace: the request carries its traceparent.
func TestHTTPCarriesTheTrace(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	defer srv.Close()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x0a, 0xf7, 0x65}, SpanID: trace.SpanID{0xb7, 0xad}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(t.Context(), sc)
	if _, err := newTestHTTP().run(ctx, HTTPArgs{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01" {
		t.Fatalf("traceparent %q", h)
	}
}
