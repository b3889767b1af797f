package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rotahq/rota/internal/rediskeys"
	"github.com/rotahq/rota/store"
)

// schemaVersion is the layout of keys this build reads and writes, kept in the meta hash. 2 added
// dependencies (workflows): a build of version 1 would not settle them, so it refuses the
// namespace. 3 keeps a job's one dependent in its hash (addEdge in prelude.lua), which a build of
// version 2 would take for the flag of a set and never settle. 4 drops the index of available
// jobs by age for a registry of each queue's kinds (flushReady in prelude.lua), so a version 3
// build would leave the jobs it makes available out of it. 5 names the id counter by the version
// (newIds in prelude.lua: an insert reads the meta hash only when the counter starts) and adds a
// queue to the queues set only when its kind is new to it, and writes no attempt or fence field
// for a job until it is claimed: a version 4 build would write jobs into a namespace it cannot
// tell from its own, leave queues that QueueStats would not list, and fail on those jobs.
// Release entries (the rel:<id> hashes, addEdge in prelude.lua) took no new version: every build
// releases a dependent right without them. 6 releases the dependent of a direct entry from the
// entry alone, trusting that it is still pending: a version 5 build would cancel, retry or
// delete such a dependent and leave its entry behind.
const schemaVersion = 6

// Store is a store.Store on Redis. It is also a store.Notifier, store.Leaser,
// store.NodeRegistry and store.QueueLoader.
type Store struct {
	rdb        goredis.UniversalClient
	ownsClient bool
	cfg        config

	prefix  string   // rota:{ns}:
	keys    []string // KEYS of every script: the meta hash
	channel string   // the namespace's pub/sub channel
	origin  string   // tells this Store's insert notifications from every other's

	listener  *listener
	inserts   coalescer
	hints     claimHints // what completions of the jobs this Store claimed need (hints.go)
	closeOnce sync.Once

	// betweenRescueScripts, when set (by tests), runs after Rescue read its candidates and
	// before it ends them.
	betweenRescueScripts func()
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Notifier     = (*Store)(nil)
	_ store.Leaser       = (*Store)(nil)
	_ store.NodeRegistry = (*Store)(nil)
	_ store.QueueLoader  = (*Store)(nil)
)

// PoolSizeDefault is the connection pool Open makes unless the URL sets pool_size.
const PoolSizeDefault = 32

// Open connects to the Redis at url with a client of its own, which Close closes. See ParseURL
// for the URL's form. It loads the scripts, checks that the namespace is not newer than this
// build (store.ErrSchemaTooNew) and, WithAutoMigrate, migrates it.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	uo, ns, urlOpts, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	if ns != "" {
		urlOpts = append([]Option{WithNamespace(ns)}, urlOpts...)
	}
	// The caller's options come last, so they win over the URL's.
	opts = append(urlOpts, opts...)
	s, err := New(goredis.NewUniversalClient(uo), opts...)
	if err != nil {
		return nil, err
	}
	s.ownsClient = true
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// ParseURL reads redis://[user:pass@]host:port/db?namespace=NAME (rediss:// for TLS) into client
// options and the namespace ("" when the URL names none). Further addr=host:port parameters add
// seed nodes (a Cluster), and master_name=NAME makes the addresses Sentinels: one code path,
// redis.UniversalClient, serves all three. The store's own parameters are checked here and
// applied by Open: allow_eviction=true is WithAllowEviction, and wait_replicas=N with an
// optional wait_timeout=DURATION (such as 500ms; a bare number is milliseconds) is
// WithWaitReplicas.
func ParseURL(raw string) (*goredis.UniversalOptions, string, error) {
	uo, ns, _, err := parseURL(raw)
	return uo, ns, err
}

// parseURL is ParseURL that also returns the Options the URL's store parameters stand for.
func parseURL(raw string) (*goredis.UniversalOptions, string, []Option, error) {
	base, query, _ := strings.Cut(raw, "?")
	var ns, master string
	var addrs, rest []string
	poolSizeSet := false
	var opts []Option
	waitN, waitTimeout := -1, time.Duration(0)
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "allow_eviction":
			allow, err := strconv.ParseBool(v)
			if err != nil {
				return nil, "", nil, fmt.Errorf("redis: store URL: allow_eviction=%q: want true or false", v)
			}
			if allow {
				opts = append(opts, WithAllowEviction())
			}
		case "wait_replicas":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, "", nil, fmt.Errorf("redis: store URL: wait_replicas=%q: want a number of replicas, 0 or more", v)
			}
			waitN = n
		case "wait_timeout":
			d, err := parseWaitTimeout(v)
			if err != nil {
				return nil, "", nil, fmt.Errorf("redis: store URL: wait_timeout=%q: %w", v, err)
			}
			waitTimeout = d
		case "namespace":
			ns = v
			if ns == "" {
				return nil, "", nil, errors.New("redis: store URL: ?namespace= names no namespace")
			}
		case "addr":
			addrs = append(addrs, v)
		case "master_name":
			master = v
		default:
			if k == "pool_size" {
				poolSizeSet = true
			}
			rest = append(rest, kv)
		}
	}
	if waitTimeout > 0 && waitN < 0 {
		return nil, "", nil, errors.New("redis: store URL: wait_timeout= without wait_replicas=")
	}
	if waitN >= 0 {
		opts = append(opts, WithWaitReplicas(waitN, waitTimeout))
	}
	if len(rest) > 0 {
		base += "?" + strings.Join(rest, "&")
	}
	o, err := goredis.ParseURL(base)
	if err != nil {
		// The error may repeat the URL, password and all.
		return nil, "", nil, errors.New("redis: store URL: not a valid redis:// or rediss:// URL")
	}
	poolSize := o.PoolSize
	if !poolSizeSet {
		poolSize = PoolSizeDefault
	}
	uo := &goredis.UniversalOptions{
		Addrs: append([]string{o.Addr}, addrs...), DB: o.DB, Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, MasterName: master, PoolSize: poolSize, ClientName: o.ClientName,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: true,
		// No command is sent again after a lost connection: a script whose reply was lost may
		// have run, and running it again would insert a job twice or strand the first claim's
		// jobs until their leases pass. The caller sees the error (store.ErrUnavailable) and the
		// runtime retries at its own level, where a claim is a new claim.
		MaxRetries: -1,
		// go-redis asks for maintenance notifications on connect from v9.15, which Redis and
		// Valkey servers refuse.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	return uo, ns, opts, nil
}

// parseWaitTimeout reads wait_timeout: a Go duration, or a bare number of milliseconds as WAIT
// itself takes. It must be above zero: WAIT 0 blocks until the replicas answer, however long.
func parseWaitTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if ms, errMs := strconv.Atoi(v); errMs == nil {
		d, err = time.Duration(ms)*time.Millisecond, nil
	}
	if err != nil {
		return 0, errors.New("want a duration such as 500ms or 2s")
	}
	if d <= 0 {
		return 0, errors.New("must be above zero (WAIT 0 would wait forever)")
	}
	return d, nil
}

// New returns a Store on a client the caller owns and closes after the Store: a *redis.Client,
// *redis.ClusterClient or failover client. It does no I/O.
func New(rdb goredis.UniversalClient, opts ...Option) (*Store, error) {
	cfg := config{namespace: NamespaceDefault, logger: slog.Default(), settleBatch: SettleBatchDefault}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.namespace == "" || strings.ContainsAny(cfg.namespace, "{}") {
		return nil, fmt.Errorf("redis: namespace %q: must be non-empty and hold no braces", cfg.namespace)
	}
	if cfg.waitReplicas > 0 {
		switch rdb.(type) {
		case *goredis.Client, *goredis.ClusterClient:
		default:
			return nil, fmt.Errorf("redis: wait for replicas: a %T has no one connection to WAIT on; use a *redis.Client or *redis.ClusterClient", rdb)
		}
	}
	prefix := rediskeys.Prefix(cfg.namespace)
	s := &Store{
		rdb:     rdb,
		cfg:     cfg,
		prefix:  prefix,
		keys:    []string{prefix + "meta"},
		channel: prefix + "ev",
		origin:  rand.Text()[:16],
	}
	s.listener = newListener(s)
	s.inserts.do, s.inserts.limit = s.insertNow, coalesceInflight
	return s, nil
}

// start loads the scripts and checks the namespace's version, or migrates when asked to.
func (s *Store) start(ctx context.Context) error {
	if err := s.loadLibrary(ctx); err != nil {
		return s.fail("open: load functions", err)
	}
	if err := s.checkServer(ctx); err != nil {
		return err
	}
	if s.cfg.autoMigrate {
		return s.Migrate(ctx)
	}
	v, err := s.rdb.HGet(ctx, s.keys[0], "version").Result()
	if errors.Is(err, goredis.Nil) {
		s.cfg.logger.Warn("rota: redis namespace needs migrating", "namespace", s.cfg.namespace)
		return nil
	}
	if err != nil {
		return s.fail("open", err)
	}
	n, _ := strconv.Atoi(v)
	if n > schemaVersion {
		return fmt.Errorf("redis: open: namespace %q at version %d, this build knows %d: %w",
			s.cfg.namespace, n, schemaVersion, store.ErrSchemaTooNew)
	}
	if n < schemaVersion {
		s.cfg.logger.Warn("rota: redis namespace needs migrating", "namespace", s.cfg.namespace, "version", n, "want", schemaVersion)
	}
	return nil
}

// Client returns the store's Redis client.
func (s *Store) Client() goredis.UniversalClient { return s.rdb }

// Namespace returns the namespace the store's keys live under.
func (s *Store) Namespace() string { return s.cfg.namespace }

// Close stops the subscriber and, for a Store from Open, closes the client. Jobs are not touched.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.listener.Close()
		if s.ownsClient {
			s.rdb.Close()
		}
	})
	return nil
}

// nowArg is ARGV[2] of every script: the clock's time in µs, or "" for Redis' TIME.
func (s *Store) nowArg() string {
	if s.cfg.clock == nil {
		return ""
	}
	return strconv.FormatInt(s.cfg.clock.Now().UnixMicro(), 10)
}

// argv is sc's ARGV: the prefix, the time and the schema version, then args, then for a script
// that settles dependents how many it may settle.
func (s *Store) argv(sc *script, args []any) []any {
	out := make([]any, 0, 4+len(args))
	out = append(out, s.prefix, s.nowArg(), schemaVersion)
	out = append(out, args...)
	if sc.settles {
		out = append(out, s.cfg.settleBatch)
	}
	return out
}

// run runs sc with args after the common ARGV, as FCALL (FCALL_RO for a script that only
// reads). A library gone missing (FUNCTION FLUSH, a restart without persistence, a new primary
// that never had it) is loaded again and the call made once more. A state-changing script is
// followed by WAIT when the store waits for replicas (see writer). What a script that settles
// dependents left parked is settled before run returns (see afterParked).
func (s *Store) run(ctx context.Context, sc *script, args ...any) (any, error) {
	argv := s.argv(sc, args)
	if sc.readOnly {
		return s.result(sc.name, s.fcall(ctx, s.rdb, sc, argv))
	}
	v, err := s.write(ctx, sc, argv)
	if err != nil || !sc.settles {
		return v, err
	}
	v, parked := unwrapParked(v)
	if parked {
		s.afterParked(ctx, sc)
	}
	return v, nil
}

// write runs a state-changing script on the store's writer.
func (s *Store) write(ctx context.Context, sc *script, argv []any) (any, error) {
	w, release, err := s.writer(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	v, err := s.result(sc.name, s.fcall(ctx, w, sc, argv))
	if err != nil {
		// Scripts check before they write: one that failed wrote nothing to wait for.
		return nil, err
	}
	if sc.waitIf != nil {
		if reply, _ := unwrapParked(v); !sc.waitIf(reply) {
			return v, nil
		}
	}
	if err := s.waitReplicas(ctx, w, sc.name); err != nil {
		return nil, err
	}
	return v, nil
}

// multi runs sc once per ARGV list of calls, in one MULTI/EXEC (which keeps their order and
// makes them one atomic step), op naming the call in errors; it returns each script's own reply
// and whether any left dependents parked. The scripts go as EVAL, with their source: an
// FCALL or EVALSHA that met a missing function or script inside the transaction would fail
// alone while the others ran.
func (s *Store) multi(ctx context.Context, sc *script, op string, calls [][]any) ([]any, bool, error) {
	w, release, err := s.writer(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	cmds := make([]*goredis.Cmd, len(calls))
	_, err = w.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		for i, args := range calls {
			cmds[i] = sc.eval().Eval(ctx, p, s.keys, s.argv(sc, args)...)
		}
		return nil
	})
	if err != nil {
		return nil, false, s.fail(op, txErr(err, cmds))
	}
	out := make([]any, len(cmds))
	parked := false
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil {
			return nil, false, s.fail(op, err)
		}
		var p bool
		out[i], p = unwrapParked(v)
		parked = parked || p
	}
	if err := s.waitReplicas(ctx, w, op); err != nil {
		return nil, false, err
	}
	return out, parked, nil
}

// txErr is the error of a failed MULTI/EXEC: the queued command's own (an OOM refusal, say)
// rather than the EXECABORT it caused.
func txErr(err error, cmds []*goredis.Cmd) error {
	if !strings.HasPrefix(err.Error(), "EXECABORT") {
		return err
	}
	for _, c := range cmds {
		if e := c.Err(); e != nil && !strings.HasPrefix(e.Error(), "EXECABORT") {
			return e
		}
	}
	return err
}

// fcall calls sc's function on c, loading the library first when Redis has lost it.
func (s *Store) fcall(ctx context.Context, c goredis.Cmdable, sc *script, argv []any) *goredis.Cmd {
	call := func() *goredis.Cmd {
		if sc.readOnly {
			return c.FCallRO(ctx, sc.fn, s.keys, argv...)
		}
		return c.FCall(ctx, sc.fn, s.keys, argv...)
	}
	cmd := call()
	if err := cmd.Err(); err == nil || !strings.Contains(err.Error(), "Function not found") {
		return cmd
	}
	if err := s.loadLibrary(ctx); err != nil {
		cmd.SetErr(fmt.Errorf("%w; loading the functions again failed: %w", cmd.Err(), err))
		return cmd
	}
	return call()
}

// loadLibrary loads the function library on the server, or on every primary of a cluster. A
// library of the same name is the same code (the name is a hash of it), so finding it loaded
// already is success.
func (s *Store) loadLibrary(ctx context.Context) error {
	load := func(ctx context.Context, c goredis.Cmdable) error {
		err := c.FunctionLoad(ctx, librarySource).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}
	if cc, ok := s.rdb.(*goredis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return load(ctx, c) })
	}
	return load(ctx, s.rdb)
}

// result reads a script's reply, nil for a nil reply.
func (s *Store) result(name string, cmd *goredis.Cmd) (any, error) {
	v, err := cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(name, err)
	}
	return v, nil
}
