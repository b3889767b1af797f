package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rotahq/rota"
)

// A job's page shows its args indented; indenting deeply nested JSON writes the indent of every
// level on every line, so a few KiB of args must not become a page of many MiB.
func TestJobPageShowsDeeplyNestedArgsAsTheyAre(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	const depth = 1000
	nest := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	args := `{"a":[` + strings.Repeat(nest+",", 4) + nest + `]}` // about 10 KiB
	res, err := s.client.Insert(context.Background(), rota.RawArgs{KindName: "ok", JSON: []byte(args)},
		&rota.InsertOpts{Queue: "parked"})
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := get(t, c, s.url+"/jobs/"+itoa(res.Job.ID))
	if code != http.StatusOK {
		t.Fatalf("job page: %d", code)
	}
	t.Logf("args %d bytes, page %d bytes", len(args), len(body))
	if len(body) > 1<<20 {
		t.Fatalf("the page of a job with %d bytes of args is %d bytes", len(args), len(body))
	}
}

// A signed-in page (a job's args and result, which often hold secrets) is not kept by the
// browser: after sign-out its back button or cache shows nothing of it.
func TestSignedInPagesAreNotCached(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	res, err := s.client.Insert(context.Background(), rota.RawArgs{KindName: "ok", JSON: []byte(`{"password":"x"}`)},
		&rota.InsertOpts{Queue: "parked"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(s.url + "/jobs/" + itoa(res.Job.ID))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Fatalf("a job's page has Cache-Control %q, want no-store", got)
	}
}
