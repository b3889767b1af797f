package builtin

import (
	"os"
	"strings"
	"testing"

	"github.com/rotahq/rota"
)

// envOf runs `env` through w and returns the program's environment.
func envOf(t *testing.T, w *execWorker, job map[string]string) map[string]string {
	t.Helper()
	res, err := w.run(t.Context(), ExecArgs{Program: "env", Env: job})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(res.Stdout) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		env[k] = v
	}
	return env
}

// A program gets the minimal set and the passed variables of the node's environment, and the
// job's own; never rota's (its secrets), even when PassEnv names them, nor the supervisor's.
func TestExecCleanEnvironment(t *testing.T) {
	t.Setenv("ROTA_API_TOKEN", "secret-token")
	t.Setenv("ROTA_STORE", "postgres://rota:password@db/rota")
	t.Setenv("EXEC_TEST_UNNAMED", "not passed")
	t.Setenv("EXEC_TEST_PASSED", "passed")
	t.Setenv("HOME", "/home/exec-test")
	t.Setenv("LANG", "C.UTF-8")
	w := newExecWorker(Config{
		PassEnv:        []string{"EXEC_TEST_PASSED", "ROTA_API_TOKEN", "rota_store", "BAD=NAME", ""},
		MaxResultBytes: rota.MaxResultBytesDefault,
	})
	env := envOf(t, w, map[string]string{"EXEC_TEST_JOB": "from the job"})
	for k := range env {
		if strings.HasPrefix(strings.ToUpper(k), "ROTA_") || k == "GORACE" {
			t.Errorf("the program got %s=%s", k, env[k])
		}
	}
	if _, ok := env["EXEC_TEST_UNNAMED"]; ok {
		t.Error("the program got EXEC_TEST_UNNAMED, which neither ExecBaseEnv nor PassEnv names")
	}
	for k, want := range map[string]string{
		"EXEC_TEST_PASSED": "passed",
		"EXEC_TEST_JOB":    "from the job",
		"PATH":             os.Getenv("PATH"),
		"HOME":             "/home/exec-test",
		"LANG":             "C.UTF-8",
	} {
		if got, ok := env[k]; !ok || got != want {
			t.Errorf("the program's %s = %q (set: %v), want %q", k, got, ok, want)
		}
	}

	// The job's variables override the node's.
	if got := envOf(t, w, map[string]string{"HOME": "/job/home"})["HOME"]; got != "/job/home" {
		t.Errorf("HOME = %q, want the job's /job/home", got)
	}
}

// Under an allow-list of programs, a job may set only the variables AllowEnv names: the others
// could make an allowed program do something else. The run and ValidateExec refuse them alike.
func TestExecEnvAllowList(t *testing.T) {
	cfg := Config{AllowPrograms: []string{"sh"}, AllowEnv: []string{"GREETING"}, MaxResultBytes: rota.MaxResultBytesDefault}
	w := newExecWorker(cfg)
	for _, name := range []string{"BASH_FUNC_date%%", "PATH", "LD_PRELOAD", "BASH_ENV"} {
		args := ExecArgs{Program: "sh", Args: []string{"-c", "echo ran"}, Env: map[string]string{name: "() { echo pwned; }", "GREETING": "hi"}}
		_, err := w.run(t.Context(), args)
		if !isPermanent(err) || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "--allow-env (GREETING)") {
			t.Errorf("env %s: error = %v, want a permanent refusal naming it and --allow-env", name, err)
			continue
		}
		if strings.Contains(err.Error(), `"GREETING"`) {
			t.Errorf("env %s: error = %v names the allowed GREETING", name, err)
		}
		if verr := cfg.ValidateExec(args); verr == nil || !strings.Contains(verr.Error(), `"`+name+`"`) {
			t.Errorf("ValidateExec with env %s = %v, want the same refusal", name, verr)
		}
	}

	allowed := ExecArgs{Program: "sh", Args: []string{"-c", `echo "$GREETING"`}, Env: map[string]string{"GREETING": "hello"}}
	if err := cfg.ValidateExec(allowed); err != nil {
		t.Errorf("ValidateExec refused an allowed variable: %v", err)
	}
	res, err := w.run(t.Context(), allowed)
	if err != nil || res.Stdout != "hello\n" {
		t.Fatalf("allowed variable: res = %+v, err = %v", res, err)
	}

	// Without an allow-list of programs any program may run, so a job may set any variable.
	free := ExecArgs{Program: "sh", Args: []string{"-c", `echo "$GREETING $BASH_ENV"`}, Env: map[string]string{"GREETING": "hi", "BASH_ENV": "/dev/null", "PATH": os.Getenv("PATH")}}
	if err := (Config{}).ValidateExec(free); err != nil {
		t.Errorf("ValidateExec without an allow-list: %v", err)
	}
	res, err = newTestExec().run(t.Context(), free)
	if err != nil || res.Stdout != "hi /dev/null\n" {
		t.Fatalf("without an allow-list: res = %+v, err = %v", res, err)
	}
}

func TestValidateExecChecksProgramAndArgs(t *testing.T) {
	cfg := Config{AllowPrograms: []string{"echo"}}
	if err := cfg.ValidateExec(ExecArgs{Program: "sh"}); err == nil || !strings.Contains(err.Error(), `program "sh" is not on this node's allow-list (echo)`) {
		t.Errorf("ValidateExec(sh) = %v, want the allow-list refusal", err)
	}
	if err := cfg.ValidateExec(ExecArgs{Program: "echo", Timeout: Duration(-1)}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("ValidateExec with a negative timeout = %v, want it refused", err)
	}
	if err := cfg.ValidateExec(ExecArgs{Program: "echo", Args: []string{"hi"}}); err != nil {
		t.Errorf("ValidateExec(echo) = %v", err)
	}
}

func TestCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"rota's token", Config{PassEnv: []string{"ROTA_API_TOKEN"}}, []string{"--pass-env", "ROTA_API_TOKEN", "ROTA_"}},
		{"rota's, in lower case", Config{PassEnv: []string{"rota_store"}}, []string{"--pass-env", "rota_store"}},
		{"empty name", Config{PassEnv: []string{""}}, []string{"--pass-env", `"" is not a valid variable name`}},
		{"name with =", Config{PassEnv: []string{"A=B"}}, []string{"--pass-env", `"A=B" is not a valid`}},
		{"allow env with NUL", Config{AllowEnv: []string{"A\x00"}}, []string{"--allow-env", "not a valid"}},
		{"every error", Config{PassEnv: []string{"ROTA_STORE", "X=Y"}}, []string{"ROTA_STORE", `"X=Y"`}},
	} {
		err := CheckConfig(tc.cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: CheckConfig = %v, want an error containing %q", tc.name, err, w)
			}
		}
	}
	ok := Config{AllowPrograms: []string{"sh"}, AllowEnv: []string{"GREETING", "BASH_FUNC_x%%"}, PassEnv: []string{"HTTPS_PROXY"}}
	if err := CheckConfig(ok); err != nil {
		t.Errorf("CheckConfig(%+v) = %v", ok, err)
	}
}
