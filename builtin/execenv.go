package builtin

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rotahq/rota"
)

// ExecBaseEnv names the variables of the node's own environment that every exec program gets,
// when the node has them. Programs get nothing else of it unless Config.PassEnv names it: the
// node's environment holds its secrets (ROTA_API_TOKEN, a ROTA_STORE URL with a password), and a
// program is whatever a job names. Each entry is here because common programs misbehave without
// it, and none of them is a secret:
var ExecBaseEnv = []string{
	"PATH",     // programs, and the scripts they run, find other programs by name
	"HOME",     // tools read their configuration and keep caches there (git, ssh, pip), or fail
	"USER",     // who the program runs as, for tools that ask the environment
	"LOGNAME",  // the same, by the name POSIX gives it
	"LANG",     // the locale: without it programs fall back to ASCII and mangle UTF-8 output
	"LC_ALL",   // overrides LANG where the node sets it
	"LC_CTYPE", // the character encoding alone, which macOS sets instead of LANG
	"TZ",       // the time zone, so times a program prints match the node's
	"TMPDIR",   // where temporary files go, on hosts that keep them off a shared /tmp
}

// rotaPrefix starts the names of rota's own variables. Programs never get the node's: they are its
// settings and secrets.
const rotaPrefix = "ROTA_"

// isRotaVariable reports whether name is one of rota's own variables. The comparison ignores case
// because Windows looks variables up that way.
func isRotaVariable(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), rotaPrefix)
}

// checkEnvName refuses what cannot be a variable's name in an environment of NAME=VALUE strings.
func checkEnvName(name string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("%q is not a valid variable name", name)
	}
	return nil
}

// passable returns the names of names that a program may get from the node: valid, and not rota's
// own. CheckConfig refuses the others; Register, given them anyway, drops them.
func passable(names []string) []string {
	var out []string
	for _, n := range names {
		if checkEnvName(n) == nil && !isRotaVariable(n) {
			out = append(out, n)
		}
	}
	return out
}

// programEnv is the environment of a program: the node's variables named by ExecBaseEnv and pass
// (which passable has filtered), then the job's own, which override them. The job's may have any
// name: their values come from the job, not from the node. Sorted, so a run is reproducible.
func programEnv(pass []string, job map[string]string) []string {
	vars := map[string]string{}
	for _, name := range slices.Concat(ExecBaseEnv, pass) {
		if isRotaVariable(name) {
			continue
		}
		if v, ok := os.LookupEnv(name); ok {
			vars[name] = v
		}
	}
	for k, v := range job {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// refusedEnv returns the job's variables that allow does not name, sorted.
func refusedEnv(job map[string]string, allow []string) []string {
	var refused []string
	for k := range job {
		if !slices.Contains(allow, k) {
			refused = append(refused, k)
		}
	}
	slices.Sort(refused)
	return refused
}

// errEnvNotAllowed is the refusal of a job's variables under an allow-list of programs.
func errEnvNotAllowed(refused, allow []string) error {
	quoted := make([]string, len(refused))
	for i, r := range refused {
		quoted[i] = fmt.Sprintf("%q", r)
	}
	allowed := "none"
	if len(allow) > 0 {
		allowed = strings.Join(allow, ", ")
	}
	return errors.New("exec args: env " + strings.Join(quoted, ", ") +
		": with an allow-list of programs, a job may set only the variables named by --allow-env (" + allowed + ")")
}

// The variables that tell a program which run of which job it is. rota sets them last, so a
// job's own env cannot fake them. ROTA_JOB_FENCE is the claim's fence: it grows with every claim
// of the job, so a program that writes its side effects somewhere shared can refuse a write
// older than one already made, which is how a run whose node lost the job (paused past its
// lease, cut off from the store) is kept from overwriting the run that took it over.
const (
	EnvJobID      = "ROTA_JOB_ID"
	EnvJobAttempt = "ROTA_JOB_ATTEMPT"
	EnvJobFence   = "ROTA_JOB_FENCE"
)

// jobEnv is the identity of the run, as variables.
func jobEnv(j *rota.JobRow) []string {
	return []string{
		EnvJobID + "=" + strconv.FormatInt(j.ID, 10),
		EnvJobAttempt + "=" + strconv.Itoa(j.Attempt),
		EnvJobFence + "=" + strconv.FormatInt(j.Fence, 10),
	}
}

// withIdentity appends identity to env, dropping first the entries of env that name one of its
// variables: an environment holding a name twice means the first to getenv (C, Go, Python), so
// a job's own ROTA_JOB_FENCE would otherwise win over the claim's.
func withIdentity(env, identity []string) []string {
	names := make(map[string]bool, len(identity))
	for _, kv := range identity {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return names[k]
	})
	return append(env, identity...)
}
