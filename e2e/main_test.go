package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// rotaBin is the rota binary under test, built once per run by TestMain: every test starts
// several processes of it, and building per test would cost more than some tests take.
var rotaBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test here skips in short mode; building would be wasted.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "rota-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	rotaBin = filepath.Join(dir, "rota")
	out, err := exec.Command("go", "build", "-o", rotaBin, "github.com/rotahq/rota/cmd/rota").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/rota: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needBinary skips t in short mode: these tests take seconds to minutes and start processes.
func needBinary(t *testing.T) {
	t.Helper()
	if testing.Short() || rotaBin == "" {
		t.Skip("e2e: starts rota processes on PostgreSQL; not in -short mode")
	}
}
