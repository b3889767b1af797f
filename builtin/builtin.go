// Package builtin provides the job kinds that need no Go code: exec runs a program, http calls a
// URL. They let shell scripts, cron replacements and services in other languages use rota through
// the `rota` command or the HTTP API.
//
// exec is remote code execution by design: whoever can insert an exec job can run any program as
// the user of the node. Restrict it with Config.AllowPrograms, and never expose a store that
// untrusted producers can write to. exec never runs a shell unless the job itself names one.
package builtin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/rotahq/rota"
)

// The kinds this package registers.
const (
	KindExec = "exec"
	KindHTTP = "http"
)

// Limits of captured output and of the recorded result.
const (
	// OutputBytesDefault is how much of each of stdout, stderr and an HTTP response body is kept
	// when the job does not say: enough for a report, small enough to keep the job row light.
	OutputBytesDefault = 64 << 10
	// OutputBytesMax caps what a job may ask for. Output is stored in the job's row and read
	// with it; larger output belongs in a file the job writes.
	OutputBytesMax = 256 << 10
)

// Config configures the built-in kinds. The zero value allows every program.
type Config struct {
	// AllowPrograms, when not empty, is the list of programs exec may run: a job naming another
	// program ends cancelled at once, without retries. An entry matches a job's program when
	// both are the same string or resolve (through PATH) to the same file.
	AllowPrograms []string
	// AllowEnv lists the environment variables an exec job's env may set. With AllowPrograms
	// set, a job may set only these (none when empty): a variable such as PATH, LD_PRELOAD,
	// BASH_ENV or BASH_FUNC_name%% changes what an allowed program does. Without
	// AllowPrograms any program may run anyway, and so a job may set any variable.
	AllowEnv []string
	// PassEnv lists variables of the node's own environment that exec programs get, beyond the
	// minimal set (ExecBaseEnv). Programs never get the rest of it: the node's environment
	// holds its own secrets (an API token, a store URL with a password).
	PassEnv []string
	// HTTPAllow opens addresses that the http kind refuses by default — loopback, private,
	// link-local (cloud metadata services included), unspecified, shared (100.64.0.0/10),
	// multicast, broadcast and reserved ones, in any of their IPv6 forms — judged on the address
	// dialled, on every redirect too. Each entry is a CIDR ("10.1.0.0/16") or an IP, opening
	// those addresses for any host, or a host name (exact, no port), opening whatever that host
	// resolves to. Register panics on a malformed entry; CheckConfig reports it.
	HTTPAllow []string
	// Kinds lists the built-in kinds Register adds. Defaults to all of them (Kinds()).
	Kinds []string
	// HTTPClient sends the http kind's requests. Defaults to a client with its own transport and
	// no overall timeout (each job's timeout bounds its request), which refuses internal
	// addresses (see HTTPAllow) and ignores HTTP_PROXY, so that the guard judges the real target.
	// A client given here is used as given: neither the guard nor HTTPAllow applies to it; only
	// when it has no CheckRedirect does it get the default's, which keeps credentials to the
	// job's own origin.
	HTTPClient *http.Client
	// MaxResultBytes caps the encoded result; captured output is trimmed to fit. Set it to the
	// node's Config.MaxResultBytes when that is changed. Defaults to rota.MaxResultBytesDefault.
	MaxResultBytes int
}

// Register adds the workers of cfg.Kinds (exec and http by default) to ws. Both enforce their jobs' own timeouts, so they
// are registered without a runtime timeout: a job may ask for hours.
func Register(ws *rota.Workers, cfg Config) {
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = rota.MaxResultBytesDefault
	}
	noTimeout := &rota.WorkerOptions{Timeout: -1}
	if cfg.registers(KindExec) {
		rota.AddWorker[ExecArgs](ws, newExecWorker(cfg), noTimeout)
	}
	if cfg.registers(KindHTTP) {
		rota.AddWorker[HTTPArgs](ws, newHTTPWorker(cfg), noTimeout)
	}
}

// registers reports whether Register adds kind.
func (c Config) registers(kind string) bool { return c.Kinds == nil || slices.Contains(c.Kinds, kind) }

// Kinds lists the kinds Register adds.
func Kinds() []string { return []string{KindExec, KindHTTP} }

// IsKind reports whether kind is one of the built-in kinds.
func IsKind(kind string) bool { return slices.Contains(Kinds(), kind) }

// Validate checks args for a built-in kind as its worker will, so a producer can reject a job
// that would only fail. Kinds that are not built in are not checked.
func Validate(kind string, args json.RawMessage) error {
	switch kind {
	case KindExec:
		var a ExecArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return fmt.Errorf("exec args: %w", err)
		}
		return a.validate()
	case KindHTTP:
		var a HTTPArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return fmt.Errorf("http args: %w", err)
		}
		_, err := a.request()
		return err
	}
	return nil
}

// outputLimit returns the per-stream byte limit a job asked for, within bounds.
func outputLimit(asked int) (int, error) {
	switch {
	case asked < 0:
		return 0, fmt.Errorf("output limit %d is negative", asked)
	case asked == 0:
		return OutputBytesDefault, nil
	case asked > OutputBytesMax:
		return 0, fmt.Errorf("output limit %d bytes is over the maximum of %d", asked, OutputBytesMax)
	}
	return asked, nil
}
