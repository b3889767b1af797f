package builtin

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// CheckConfig refuses what in cfg the built-in kinds would not honour as written: a PassEnv name
// that is not a valid variable name or that starts with ROTA_ (rota's own variables hold its
// secrets, and programs never get them), an AllowEnv name that is not a valid variable name, and
// a malformed HTTPAllow entry. A command
// calls it at start, so an operator learns at once rather than from a program that misses a
// variable. Register drops such PassEnv names without complaint.
func CheckConfig(cfg Config) error {
	var errs []error
	for _, name := range cfg.PassEnv {
		if err := checkEnvName(name); err != nil {
			errs = append(errs, fmt.Errorf("pass env (--pass-env): %w", err))
		} else if isRotaVariable(name) {
			errs = append(errs, fmt.Errorf("pass env (--pass-env) %s: exec programs never get variables starting with %s, which hold rota's own settings and secrets", name, rotaPrefix))
		}
	}
	for _, name := range cfg.AllowEnv {
		if err := checkEnvName(name); err != nil {
			errs = append(errs, fmt.Errorf("allow env (--allow-env): %w", err))
		}
	}
	if err := CheckHTTPAllow(cfg.HTTPAllow); err != nil {
		errs = append(errs, fmt.Errorf("http allow (--http-allow): %w", err))
	}
	return errors.Join(errs...)
}

// ValidateExec checks an exec job's args as a node with this Config will before running it: the
// args themselves, the program against AllowPrograms and the env against AllowEnv. A producer
// that knows the nodes' Config can so reject at insert time a job that would only end cancelled.
// A program named without a path is resolved through this process's PATH, which may differ from
// the node's: the node checks again.
func (c Config) ValidateExec(a ExecArgs) error {
	return newExecPolicy(c).check(a)
}

// execPolicy is what a node's Config says about the programs it runs and their environment.
type execPolicy struct {
	programs []string
	allowEnv []string
	passEnv  []string
}

func newExecPolicy(cfg Config) execPolicy {
	return execPolicy{
		programs: slices.Clone(cfg.AllowPrograms),
		allowEnv: slices.Clone(cfg.AllowEnv),
		passEnv:  passable(cfg.PassEnv),
	}
}

// check refuses args that no run on this node can accept.
func (p execPolicy) check(a ExecArgs) error {
	if err := a.validate(); err != nil {
		return err
	}
	if len(p.programs) == 0 {
		return nil
	}
	// A relative path with a slash runs relative to the job's dir: it is that file that must
	// be allowed, not any file of the name.
	program := a.Program
	if a.Dir != "" && !filepath.IsAbs(program) && strings.ContainsRune(program, filepath.Separator) {
		program = filepath.Join(a.Dir, program)
	}
	if !p.programAllowed(program) {
		return fmt.Errorf("program %q is not on this node's allow-list (%s)", a.Program, strings.Join(p.programs, ", "))
	}
	// Under an allow-list, the job's variables could change what an allowed program does
	// (LD_PRELOAD, BASH_ENV, PATH, BASH_FUNC_name%%): only those the node names may be set.
	if refused := refusedEnv(a.Env, p.allowEnv); len(refused) > 0 {
		return errEnvNotAllowed(refused, p.allowEnv)
	}
	return nil
}

// programAllowed reports whether program may run under the allow-list: the same string as an
// entry, or resolving through PATH to the same file.
func (p execPolicy) programAllowed(program string) bool {
	if slices.Contains(p.programs, program) {
		return true
	}
	resolved, err := exec.LookPath(program)
	if err != nil {
		return false
	}
	for _, entry := range p.programs {
		if r, err := exec.LookPath(entry); err == nil && r == resolved {
			return true
		}
	}
	return false
}

// environ is the environment of a program of this node given the job's own variables.
func (p execPolicy) environ(job map[string]string) []string { return programEnv(p.passEnv, job) }
