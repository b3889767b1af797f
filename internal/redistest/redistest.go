// Package redistest gives tests a Redis to work in: the server scripts/test makes sure of, and a
// fresh namespace per test whose keys are deleted when the test ends (never FLUSHDB), so tests of
// every package can share one Redis without seeing each other's keys. Server starts a private
// redis-server, for tests that break things (memory limits, script flushes, a dying server).
//
// Outside CI a missing server skips the test with a reason; in CI (CI=true) it fails it, so a
// green CI run means every Redis test ran.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rotahq/rota/internal/rediskeys"
)

// URLDefault is the server scripts/redis.sh makes sure of when ROTA_TEST_REDIS_URL is unset.
const URLDefault = "redis://127.0.0.1:6379/0"

// InCI reports whether tests run in CI, read as scripts/test reads it.
func InCI() bool {
	v := os.Getenv("CI")
	return v == "true" || v == "1"
}

// Client returns a plain client for url, for tests' own checks and cleanup.
func Client(t testing.TB, url string) *goredis.Client {
	t.Helper()
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("Redis URL %q: %v", url, err)
	}
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := goredis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// URL returns the test server's URL after checking that it answers.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("ROTA_TEST_REDIS_URL")
	if url == "" {
		url = URLDefault
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := Client(t, url).Ping(ctx).Err(); err != nil {
		if InCI() {
			t.Fatalf("Redis is required in CI: %v", err)
		}
		t.Skipf("no Redis at ROTA_TEST_REDIS_URL or %s (scripts/redis.sh starts one): %v", URLDefault, err)
	}
	return url
}

// Namespace returns a fresh namespace name on the server at url; its keys are deleted when the
// test ends (after the cleanups registered later, such as closing stores, have run).
func Namespace(t testing.TB, url string) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	ns := "t-" + hex.EncodeToString(b)
	c := Client(t, url)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rediskeys.Delete(ctx, c, ns); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	return ns
}

// StoreURL is url with the namespace query parameter that rota's store URLs (--store) read.
func StoreURL(t testing.TB, url, ns string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatalf("Redis URL %q: %v", url, err)
	}
	q := u.Query()
	q.Set("namespace", ns)
	u.RawQuery = q.Encode()
	return u.String()
}

// Server starts a private redis-server without persistence in a temporary directory, stopped
// when the test ends, and returns its URL and process. It skips the test (fails it in CI) when
// redis-server is not installed.
func Server(t testing.TB, args ...string) (string, *os.Process) {
	t.Helper()
	return ServerUnder(t, nil, args...)
}

// ServerUnder is Server with redis-server run by the command under (valgrind and its options,
// say), which must exec it in its own process; the server is given a minute to answer.
func ServerUnder(t testing.TB, under []string, args ...string) (string, *os.Process) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if InCI() {
			t.Fatalf("redis-server is required in CI: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	argv := append(append(slices.Clone(under), bin), "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	cmd := exec.Command(argv[0], append(argv[1:], args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	c := Client(t, url)
	wait := 5 * time.Second
	if len(under) > 0 {
		wait = time.Minute
	}
	for deadline := time.Now().Add(wait); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer: %v", port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return url, cmd.Process
}
