package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pgServer is a throwaway PostgreSQL server that scripts/postgres.sh started for one test, so the
// test may stop and start it without disturbing anyone else.
type pgServer struct {
	// dir is the script's ROTA_PG_DIR: the data in dir/data, the socket and the server log in dir.
	dir  string
	port int
	url  string
	// bin is the directory of pg_ctl.
	bin string
}

// startPostgres has scripts/postgres.sh start a new server on a free port, and stops and removes
// it when the test ends. Where the script cannot (no PostgreSQL installed and no root to install
// it) the test skips, or fails in CI.
func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	needBinary(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	// A new directory in the shared temporary directory: as root the script hands it to the user
	// postgres, who could not reach into a test's private TempDir.
	s := &pgServer{dir: filepath.Join(os.TempDir(), "rota-e2e-pg-"+hex.EncodeToString(b))}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(s.dir, "data", "PG_VERSION")); err != nil {
			return
		}
		if out, err := exec.Command("bash", "../scripts/postgres.sh", "stop", s.dir).CombinedOutput(); err != nil {
			t.Errorf("scripts/postgres.sh stop %s: %v\n%s", s.dir, err, out)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../scripts/postgres.sh")
	// The script uses a server already on ROTA_PG_PORT; a port nobody listens on makes it start
	// one of its own.
	cmd.Env = append(os.Environ(), "ROTA_PG_DIR="+s.dir, "ROTA_PG_PORT="+strconv.Itoa(freePort(t)))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		unavailable(t, "scripts/postgres.sh cannot start a throwaway PostgreSQL: %v\n%s", err, stderr.String())
	}
	s.url = strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(s.dir, "data", "PG_VERSION")); err != nil {
		t.Fatalf("scripts/postgres.sh printed %s but started no server in %s:\n%s", s.url, s.dir, stderr.String())
	}
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatalf("scripts/postgres.sh printed %q: %v", s.url, err)
	}
	if s.port, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatalf("scripts/postgres.sh printed %q: no port", s.url)
	}
	if s.bin, err = pgBinDir(); err != nil {
		t.Fatal(err)
	}
	return s
}

// stop shuts the server down the way an operator's restart does (fast: sessions are cut, open
// transactions rolled back) and waits until it is down.
func (s *pgServer) stop(t *testing.T) {
	t.Helper()
	s.pgCtl(t, "-D", filepath.Join(s.dir, "data"), "-m", "fast", "-w", "stop")
}

// crash stops the server as a crash would (immediate: every process quits at once, nothing is
// flushed, and the next start recovers from the WAL): commits made without waiting for the flush,
// as claims are, may be lost.
func (s *pgServer) crash(t *testing.T) {
	t.Helper()
	s.pgCtl(t, "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
}

// start starts the stopped server again on its port and waits until it accepts connections.
func (s *pgServer) start(t *testing.T) {
	t.Helper()
	opts := "-p " + strconv.Itoa(s.port) + " -k " + s.dir + " -c listen_addresses=127.0.0.1 -c max_connections=200"
	s.pgCtl(t, "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start")
}

// pgCtl runs pg_ctl as the user that owns the server: postgres when the tests run as root, as
// scripts/postgres.sh does.
func (s *pgServer) pgCtl(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "pg_ctl"), args...)
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("runuser"); err == nil {
			cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", cmd.Path}, args...)...)
		} else {
			cmd = exec.Command("su", "postgres", "-s", "/bin/sh", "-c", shellQuote(append([]string{cmd.Path}, args...)))
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// shellQuote joins args into one command line for sh -c.
func shellQuote(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// pgBinDir finds the server's binaries as scripts/postgres.sh does: ROTA_PG_BIN, the newest
// Debian install, or the PATH.
func pgBinDir() (string, error) {
	if dir := os.Getenv("ROTA_PG_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for _, dir := range slices.Backward(dirs) {
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pg_ctl not found (set ROTA_PG_BIN)")
}

// freePort returns a TCP port on 127.0.0.1 that nobody listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
