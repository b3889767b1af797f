package browsertest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rotahq/rota/internal/browsertest"
)

// page changes the button's text only when its inline script runs on a click, so the text after
// the click shows that a real browser loaded the page, ran its JavaScript and took the click.
const page = `<!doctype html>
<html><head><title>browsertest</title></head>
<body>
<button id="b" type="button">before</button>
<script>
document.getElementById("b").addEventListener("click", function () {
	this.textContent = "after";
});
</script>
</body></html>`

func TestContextClicks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	ctx := browsertest.Context(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.ID("b"))); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("b")))
	if err != nil || text != "before" {
		t.Fatalf("button before the click: %q, %v; want %q", text, err, "before")
	}

	// A shorter timeout on one action stops that action, not the browser.
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(actx, chromedp.Click(chromedp.ID("b"))); err != nil {
		t.Fatalf("click: %v", err)
	}
	cancel()

	text, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("b")))
	if err != nil || text != "after" {
		t.Fatalf("button after the click: %q, %v; want %q", text, err, "after")
	}
}

func TestExecPath(t *testing.T) {
	t.Setenv("ROTA_TEST_CHROMIUM", filepath.Join(t.TempDir(), "no-such-chromium"))
	if path, err := browsertest.ExecPath(); err == nil {
		t.Fatalf("ExecPath with ROTA_TEST_CHROMIUM naming no file: %q, nil; want an error", path)
	}

	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh on the PATH: %v", err)
	}
	t.Setenv("ROTA_TEST_CHROMIUM", sh)
	if path, err := browsertest.ExecPath(); err != nil || path != sh {
		t.Fatalf("ExecPath with ROTA_TEST_CHROMIUM=%s: %q, %v", sh, path, err)
	}
}
