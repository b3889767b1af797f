package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
)

// drainTimeoutDefault leaves a stopping node 25 s to let running jobs finish: below the 30 s
// that systemd and Kubernetes wait before they kill, so what is left is handed back cleanly.
const drainTimeoutDefault = 25 * time.Second

type serveOptions struct {
	queues       []string
	allow        []string
	allowEnv     []string
	passEnv      []string
	httpAllow    []string
	kinds        []string
	noExec       bool
	noHTTP       bool
	logFormat    string
	logLevel     string
	drainTimeout time.Duration
	nodeID       string
	jobLease     time.Duration
	rescueEvery  time.Duration
	leader       rota.LeaderConfig
	minFreeMem   uint64
	metricsAddr  string
	httpAddr     string
	apiTokenFile string
	apiNoAuth    bool
	apiHosts     []string
	apiProxies   []string
}

func (a *app) serveCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a node that runs the built-in job kinds (exec, http)",
		Long: `Run a node: claim jobs of the built-in kinds exec and http from the store and run them.

SIGINT or SIGTERM stops it gracefully: it takes no new jobs, lets running ones finish for up to
--drain-timeout, then cancels the rest, which go back to their queue without using an attempt.
A second signal cancels running jobs at once; a third ends the process.

exec runs any program a job names, as the user running this command. Restrict it with
--allow-program (and --allow-env), or turn it off with --no-exec. Programs get a clean
environment: none of rota's own variables, only a minimal set and --pass-env. http refuses
loopback, private and link-local addresses unless --http-allow opens them. See docs/security.md.`,
		Example: `  rota serve
  rota serve --queues default=20,reports=2 --allow-program /usr/local/bin/backup.sh
  ROTA_STORE=postgres://rota@db/rota rota serve --log-format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.queues, "queues", []string{rota.QueueDefault},
		"queues to serve, each NAME or NAME=CONCURRENCY (repeat or separate with commas)")
	f.StringArrayVar(&o.allow, "allow-program", nil,
		"allow exec jobs to run only this program (repeatable); without it exec runs any program")
	f.StringArrayVar(&o.allowEnv, "allow-env", nil,
		"with --allow-program, let exec jobs set this environment variable (repeatable); without it they may set none")
	f.StringArrayVar(&o.passEnv, "pass-env", nil,
		"pass this variable of rota's own environment to exec programs (repeatable), beyond "+strings.Join(builtin.ExecBaseEnv, ", ")+"; never a ROTA_ one")
	f.StringArrayVar(&o.httpAllow, "http-allow", nil,
		"let http jobs reach this CIDR, IP or host (repeatable); loopback, private and link-local addresses are refused without it")
	f.StringSliceVar(&o.kinds, "kinds", builtin.Kinds(), "the built-in kinds this node runs")
	f.BoolVar(&o.noExec, "no-exec", false, "run no exec jobs (the same as leaving exec out of --kinds)")
	f.BoolVar(&o.noHTTP, "no-http", false, "run no http jobs (the same as leaving http out of --kinds)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.nodeID, "node-id", "", "this node's id in leases, logs and rota status (default host-pid-random)")
	f.DurationVar(&o.jobLease, "job-lease", rota.JobLeaseDefault, "how long a running job's lease lasts without a heartbeat")
	f.DurationVar(&o.rescueEvery, "rescue-interval", rota.RescueIntervalDefault, "how often each node looks for jobs whose lease expired")
	f.DurationVar(&o.leader.TTL, "leader-ttl", 30*time.Second, "the leader lease's time to live")
	f.DurationVar(&o.leader.RenewEvery, "leader-renew", 10*time.Second, "how often the leader renews its lease")
	f.DurationVar(&o.leader.TryEvery, "leader-try", 10*time.Second, "how often other nodes try to take the leader lease")
	f.Uint64Var(&o.minFreeMem, "min-free-memory", 0, "take no new jobs while the machine has less available memory than this many bytes (0: off)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, such as 127.0.0.1:9464 (off when empty)")
	f.StringVar(&o.httpAddr, "http-addr", "", "serve the HTTP JSON API at http://ADDR/v1/ and the dashboard at http://ADDR/, such as 127.0.0.1:8080 (off when empty); the token they take comes from $"+apiTokenEnv+" or --api-token-file")
	f.StringVar(&o.apiTokenFile, "api-token-file", "", "read the HTTP API's token from this file instead of $"+apiTokenEnv)
	f.BoolVar(&o.apiNoAuth, "api-no-auth", false, "serve the HTTP API and dashboard without a token: only on a loopback --http-addr, only to loopback Host names (see --api-allow-host)")
	f.StringArrayVar(&o.apiHosts, "api-allow-host", nil,
		"with --api-no-auth, also answer requests for this Host (NAME, or NAME:PORT for that port only; repeatable); loopback names and addresses always are")
	f.StringArrayVar(&o.apiProxies, "api-trusted-proxy", nil,
		"believe X-Forwarded-For from this reverse proxy (IP or CIDR, repeatable) when limiting failed tokens and sign-ins per client")
	f.DurationVar(&o.drainTimeout, "drain-timeout", drainTimeoutDefault,
		"on SIGINT/SIGTERM, how long running jobs may finish before they are cancelled and handed back")
	return cmd
}

func (a *app) serve(ctx context.Context, o serveOptions) error {
	logger, err := newLogger(a.stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	queues, err := parseQueues(o.queues)
	if err != nil {
		return err
	}
	if o.drainTimeout < 0 {
		return fmt.Errorf("--drain-timeout %v is negative", o.drainTimeout)
	}
	if err := o.checkDurations(); err != nil {
		return err
	}
	if err := o.checkWebFlags(); err != nil {
		return err
	}
	bcfg, err := o.builtinConfig()
	if err != nil {
		return err
	}
	// Before anything reads a secret into memory: the exec jobs run as this user.
	if err := hideFromSameUser(); err != nil {
		logger.Warn("rota: cannot hide the node's environment and memory from its user's other processes", "error", err)
	}
	// Listen before starting, so a signal sent while the node starts is not lost.
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A signal while the node starts ends the start: a store that does not answer would
	// otherwise hold the process, deaf to Ctrl-C and SIGTERM, for its connect timeout. The
	// signal reaches sigs too, so one that comes as the start ends stops the node at once.
	startCtx, endStart := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer endStart()
	stoppedEarly := func(err error) error {
		if startCtx.Err() != nil && ctx.Err() == nil {
			logger.Info("rota: stopped before the node started", "reason", context.Cause(startCtx))
			return nil
		}
		return err
	}

	tp, flushSpans, err := setupTracing(ctx, logger)
	if err != nil {
		return err
	}
	defer flushSpans()
	st, err := a.openStore(startCtx, logger)
	if err != nil {
		return stoppedEarly(err)
	}
	defer closeStore(st, logger)
	if err := checkWritable(startCtx, st, "rota serve "+o.nodeID, a.storeName()); err != nil {
		return stoppedEarly(err)
	}
	workers := rota.NewWorkers()
	builtin.Register(workers, bcfg)
	node, err := rota.NewNode(rota.Config{
		Store: st, Workers: workers, Queues: queues, Logger: logger, ID: o.nodeID, Version: buildVersion().Version,
		JobLease: o.jobLease, RescueInterval: o.rescueEvery, Leader: o.leader, MinFreeMemory: o.minFreeMem,
		TracerProvider: tp,
	})
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		stopMetrics, err := serveMetrics(ctx, node, o.metricsAddr, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	stopAPI := func() {}
	if o.httpAddr != "" {
		token, err := apiToken(o.apiTokenFile)
		if err != nil {
			return err
		}
		proxies, err := parseTrustedProxies(o.apiProxies)
		if err != nil {
			return err
		}
		stop, err := serveWeb(node, webOptions{addr: o.httpAddr, token: token, noAuth: o.apiNoAuth,
			allowedHosts: o.apiHosts, trustedProxies: proxies}, logger)
		if err != nil {
			return err
		}
		stopAPI = sync.OnceFunc(stop)
		defer stopAPI()
	}
	if err := node.Start(startCtx); err != nil {
		return stoppedEarly(err)
	}
	endStart()
	logger.Info("rota: serving", "store", a.storeName(), "queues", queueNames(queues), "kinds", bcfg.Kinds)
	switch {
	case !slices.Contains(bcfg.Kinds, builtin.KindExec):
	case len(o.allow) == 0:
		logger.Warn("rota: exec jobs may run any program as this user; restrict them with --allow-program, or turn exec off with --no-exec")
	default:
		logger.Info("rota: exec jobs may run only the allowed programs", "programs", o.allow, "env", o.allowEnv)
	}
	select {
	case sig := <-sigs:
		logger.Info("rota: stopping: running jobs may finish; signal again to cancel them", "signal", sig.String(), "drain_timeout", o.drainTimeout)
	case <-ctx.Done():
		logger.Info("rota: stopping: running jobs may finish", "reason", context.Cause(ctx), "drain_timeout", o.drainTimeout)
	}
	stopAPI() // before the node: a request answered now is answered by a running node
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drainTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			logger.Warn("rota: second signal: cancelling running jobs; they go back to their queues; a third signal ends the process", "signal", sig.String())
			// From now on a signal has its default effect: the process ends, and leases that
			// run out return its jobs to their queues.
			signal.Stop(sigs)
			cancel()
		case <-stopCtx.Done():
		}
	}()
	if err := node.Stop(stopCtx); err != nil {
		// The interrupted jobs are back in their queues: the stop itself went as designed.
		logger.Warn("rota: jobs were cancelled before they finished and handed back", "error", err)
	}
	logger.Info("rota: stopped")
	return nil
}

// builtinConfig is the built-in kinds' configuration the flags ask for.
func (o serveOptions) builtinConfig() (builtin.Config, error) {
	var kinds []string
	for _, k := range o.kinds {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
			continue
		case !builtin.IsKind(k):
			return builtin.Config{}, fmt.Errorf("--kinds %q: the built-in kinds are %s", k, strings.Join(builtin.Kinds(), ", "))
		case k == builtin.KindExec && o.noExec, k == builtin.KindHTTP && o.noHTTP, slices.Contains(kinds, k):
			continue
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return builtin.Config{}, errors.New("--kinds, --no-exec and --no-http leave this node no kind to run")
	}
	for _, p := range o.allow {
		// A relative path is run relative to the job's own "dir": matched as a string, it
		// would allow a file of that name in any directory a job names.
		if strings.ContainsRune(p, filepath.Separator) && !filepath.IsAbs(p) {
			return builtin.Config{}, fmt.Errorf("--allow-program %q: give an absolute path, or a bare name looked up on PATH", p)
		}
	}
	if len(o.allowEnv) > 0 && len(o.allow) == 0 {
		return builtin.Config{}, errors.New("--allow-env needs --allow-program: without an allow-list exec jobs may run any program, and set any variable")
	}
	cfg := builtin.Config{AllowPrograms: o.allow, AllowEnv: o.allowEnv, PassEnv: o.passEnv, HTTPAllow: o.httpAllow, Kinds: kinds}
	if err := builtin.CheckConfig(cfg); err != nil {
		return builtin.Config{}, err
	}
	return cfg, nil
}

// newLogger builds the serve command's logger: text for people, JSON for log collectors.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// parseQueues reads NAME or NAME=CONCURRENCY entries.
func parseQueues(entries []string) (map[string]rota.QueueConfig, error) {
	queues := map[string]rota.QueueConfig{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, conc, hasConc := strings.Cut(e, "=")
		cfg := rota.QueueConfig{}
		if hasConc {
			n, err := strconv.Atoi(conc)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--queues %q: concurrency must be a whole number of at least 1", e)
			}
			cfg.MaxWorkers = n
		}
		if _, dup := queues[name]; dup {
			return nil, fmt.Errorf("--queues: queue %q is named twice", name)
		}
		queues[name] = cfg
	}
	if len(queues) == 0 {
		return nil, fmt.Errorf("--queues: name at least one queue")
	}
	return queues, nil
}

// queueNames lists queues in a stable order, for logs.
func queueNames(q map[string]rota.QueueConfig) []string {
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkDurations refuses lease and interval flags that cannot work, naming the flag: a zero would
// quietly mean the default, a negative one would stop the node once it runs.
func (o *serveOptions) checkDurations() error {
	for _, f := range []struct {
		flag string
		v    time.Duration
	}{
		{"--job-lease", o.jobLease}, {"--rescue-interval", o.rescueEvery},
		{"--leader-ttl", o.leader.TTL}, {"--leader-renew", o.leader.RenewEvery}, {"--leader-try", o.leader.TryEvery},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s %v: want a positive duration", f.flag, f.v)
		}
	}
	if o.jobLease < time.Second {
		return fmt.Errorf("--job-lease %v: want at least 1s (the node renews it every third)", o.jobLease)
	}
	// A leader steps down once a renewal is half an interval late, before its lease ends.
	if 3*o.leader.RenewEvery >= 2*o.leader.TTL {
		return fmt.Errorf("--leader-renew %v: want under two thirds of --leader-ttl %v, so that a leader that misses a renewal steps down before its lease ends",
			o.leader.RenewEvery, o.leader.TTL)
	}
	return nil
}

// checkWebFlags refuses the HTTP API's settings without --http-addr: there is then no API for
// them to apply to, and an operator who set them expects one.
func (o *serveOptions) checkWebFlags() error {
	if o.httpAddr != "" {
		return nil
	}
	for _, f := range []struct {
		flag string
		set  bool
	}{
		{"--api-token-file", o.apiTokenFile != ""}, {"--api-no-auth", o.apiNoAuth},
		{"--api-allow-host", len(o.apiHosts) > 0}, {"--api-trusted-proxy", len(o.apiProxies) > 0},
	} {
		if f.set {
			return fmt.Errorf("%s needs --http-addr: without it this node serves no HTTP API", f.flag)
		}
	}
	return nil
}
