// Package browsertest gives tests a real browser to drive: a headless Chromium under chromedp, the
// one scripts/test makes sure of. Reading the dashboard's HTML from Go shows what the server
// sent; only a browser shows what a user gets: the sign-in cookie kept and sent back under its
// SameSite rule, forms posted with the Origin a browser adds, redirects followed, the page's
// security policy applied, buttons that can be clicked.
//
// Outside CI a missing Chromium skips the test with a reason; in CI (CI=true) it fails it, so a
// green CI run means every browser test ran.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeout bounds everything a test does with the browser from Context: when it runs out, the
// browser is stopped and the actions still waiting on it fail, so a hung page or browser fails
// its test instead of hanging the suite until go test's own -timeout.
const Timeout = 60 * time.Second

// Names are the programs looked for on the PATH, in order, when ROTA_TEST_CHROMIUM is unset: the
// names Debian, Ubuntu and Google give the browser. scripts/test looks for the same ones.
var Names = []string{"chromium", "chromium-browser", "google-chrome"}

// InCI reports whether tests run in CI, read as scripts/test reads it.
func InCI() bool {
	v := os.Getenv("CI")
	return v == "true" || v == "1"
}

// ExecPath returns the path of the Chromium tests run: ROTA_TEST_CHROMIUM (a path, or a name
// looked up on the PATH) when it is set, else the first of Names on the PATH.
func ExecPath() (string, error) {
	if v := os.Getenv("ROTA_TEST_CHROMIUM"); v != "" {
		path, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("ROTA_TEST_CHROMIUM=%s: %w", v, err)
		}
		return path, nil
	}
	for _, name := range Names {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("none of %s is on the PATH", strings.Join(Names, ", "))
}

// Context returns a chromedp context on a new headless Chromium of the test's own, already
// started, to pass to chromedp.Run. The browser is stopped when the test ends, or when Timeout
// runs out. Actions may run with a shorter timeout derived from the context (context.WithTimeout):
// that stops the action, not the browser.
//
// Cleanups run last-registered first, so start the test's server (httptest.NewServer with
// t.Cleanup(srv.Close)) before calling Context: the browser then stops before the server does, and
// srv.Close, which waits for open requests, does not wait on a page the browser still has open.
//
// A Chromium that is found but does not start fails the test, with the browser's output.
// chromedp's own errors, and the browser's output when the test fails, go to the test's log.
func Context(t testing.TB) context.Context {
	t.Helper()
	path, err := ExecPath()
	if err != nil {
		if InCI() {
			t.Fatalf("Chromium is required in CI: %v", err)
		}
		t.Skipf("no Chromium (scripts/test installs Debian's chromium; ROTA_TEST_CHROMIUM names another): %v", err)
	}

	output := &tailBuffer{max: 64 << 10}
	// chromedp's goroutines may log while the browser stops; t.Logf panics once the test is over,
	// so after the cleanup below they log to the standard logger instead.
	var over atomic.Bool
	logf := func(format string, args ...any) {
		if over.Load() {
			log.Printf("browsertest: "+format, args...)
			return
		}
		t.Logf("chromedp: "+format, args...)
	}

	ctx, cancelTimeout := context.WithTimeout(context.Background(), Timeout)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		// Tests run as root in containers and CI, where Chromium's sandbox does not start.
		chromedp.NoSandbox,
		// There is no GPU to use, headless in a container.
		chromedp.DisableGPU,
		// /dev/shm is 64 MB in a default Docker container, too small for Chromium, which then
		// crashes; it keeps that memory in the temporary directory instead.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.CombinedOutput(output),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(logf), chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		// Each cancel waits for what it stops: the tab, then the browser process and its
		// temporary profile directory.
		cancelBrowser()
		cancelAlloc()
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancelTimeout()
		if t.Failed() {
			if timedOut {
				t.Logf("the browser ran out of browsertest.Timeout (%v) and was stopped", Timeout)
			}
			if out := output.String(); out != "" {
				t.Logf("output of %s:\n%s", path, out)
			}
		}
		over.Store(true)
	})

	// Start the browser now, on this context: the first chromedp.Run on a context starts the
	// browser for the lifetime of the context it is given, so a test whose first Run had a
	// shorter timeout would stop the whole browser with it.
	if err := chromedp.Do(browserCtx); err != nil {
		if out := output.String(); out != "" {
			t.Fatalf("start %s: %v\noutput of %s:\n%s", path, err, path, out)
		}
		t.Fatalf("start %s: %v", path, err)
	}
	return browserCtx
}

// tailBuffer keeps the last max bytes written to it: Chromium's output, which the test shows only
// when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

// String returns the output kept, less the lines about D-Bus: Chromium logs dozens of them in a
// container that runs no D-Bus, and they would bury the lines that tell why a test failed.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var kept []string
	for line := range strings.Lines(b.buf.String()) {
		if !strings.Contains(line, ":ERROR:dbus/") {
			kept = append(kept, line)
		}
	}
	return strings.TrimSuffix(strings.Join(kept, ""), "\n")
}
