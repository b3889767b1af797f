package httpapi_test

import (
	"net/http"
	"testing"
)

// Args of a built-in kind are checked at insert as its worker reads them: a job that could only
// fail is refused with the reason, not discarded on its first attempt.
func TestBuiltinKindsArgsAreCheckedAtInsert(t *testing.T) {
	s := newServer(t)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"exec","args":{"progam":"echo"}}`, 400, "invalid", `unknown field "progam"`)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"exec","args":["echo"]}`, 400, "invalid", `"args"`)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"exec","args":"echo"}`, 400, "invalid", `"args"`)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"exec"}`, 400, "invalid", "program is empty")
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"http","args":{"url":"https://example.com","methd":"GET"}}`, 400, "invalid", `unknown field "methd"`)
	s.wantError(t, "POST", "/v1/jobs/batch", `{"jobs":[{"kind":"exec","args":{"program":"true"}},{"kind":"exec","args":{"program":"true","timeout":"soon"}}]}`,
		400, "invalid", "job 2 of 2")
	s.wantError(t, "PUT", "/v1/schedules/nightly", `{"expr":"@daily","kind":"exec","args":{"program":"true","dir":1}}`, 400, "invalid", `"args"`)
	if n := s.countJobs(t); n != 0 {
		t.Fatalf("%d jobs inserted with bad args", n)
	}
	var in inserted
	if code := s.call(t, "POST", "/v1/jobs", `{"kind":"exec","args":{"program":"echo","args":["hi"],"timeout":"5s"}}`, &in); code != http.StatusCreated {
		t.Fatalf("good exec args: %d", code)
	}
	// Kinds that are not built in are the producer's business.
	if code := s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":["anything"]}`, nil); code != http.StatusCreated {
		t.Fatalf("a kind not built in with array args: %d", code)
	}
}
