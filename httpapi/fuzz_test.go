package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rotahq/rota/httpapi"
)

// FuzzEnqueueRequest sends arbitrary bodies to both enqueue routes of the API on a real SQLite
// store. Whatever the body, the server must not panic, and must answer either 2xx with the
// inserted jobs or 4xx with a JSON error: a 5xx would mean a caller's bytes broke the server
// (or reached the store unchecked).
func FuzzEnqueueRequest(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"greet"}`,
		`{"kind":"greet","args":{"name":"ada"},"queue":"mail","priority":3,"delay":"1h","tags":["a"],"metadata":{"by":"t"},"unique_key":"k"}`,
		`{"kind":"greet","run_at":"2030-01-01T00:00:00Z","expires_at":"2031-01-01T00:00:00Z","max_attempts":3}`,
		`{"kind":"greet","unique_key":"k","supersede":true}`,
		`{"kind":"greet","drop_if_busy":1}`,
		`{"kind":"exec","args":{"program":"echo","args":["hi"],"timeout":"5s"}}`,
		`{"kind":"exec","args":{"progam":"echo"}}`,
		`{"kind":"http","args":{"url":"https://example.com"}}`,
		`{"kind":"greet","tags":["\u0000"],"unique_key":"\ud800"}`,
		`{"kind":"greet","metadata":"not an object","args":null}`,
		`{"kind":"greet","priority":1e400}`,
		`{"kind":"greet","delay":"-1s"}`,
		`{"jobs":[{"kind":"greet"},{"kind":"greet","queue":"q2"}]}`,
		`{"jobs":[]}`,
		`{"kind":"greet"} {}`,
		`[]`, `null`, ``, `{`, `"x"`,
	} {
		f.Add(false, []byte(seed))
		f.Add(true, []byte(seed))
	}
	h, _ := newHandler(f, httpapi.Config{Token: token})
	f.Fuzz(func(t *testing.T, batch bool, body []byte) {
		path := "/v1/jobs"
		if batch {
			path = "/v1/jobs/batch"
		}
		r := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%d with Content-Type %q: %s", w.Code, ct, w.Body)
		}
		switch {
		case w.Code >= 200 && w.Code < 300:
			var ok struct {
				Job  json.RawMessage   `json:"job"`
				Jobs []json.RawMessage `json:"jobs"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &ok); err != nil || (len(ok.Job) == 0 && len(ok.Jobs) == 0) {
				t.Fatalf("%d without the inserted jobs (%v): %s", w.Code, err, w.Body)
			}
		case w.Code >= 400 && w.Code < 500:
			var e apiError
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" || e.Code == "" {
				t.Fatalf("%d without a JSON error (%v): %s", w.Code, err, w.Body)
			}
		default:
			t.Fatalf("%d for body %q: %s", w.Code, body, w.Body)
		}
	})
}
