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

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rotahq/rota/store"
)

// schemaVersion is the layout of keys this build reads and writes, kept in the meta hash.
const schemaVersion = 1

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
	closeOnce sync.Once
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
	uo, ns, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	if ns != "" {
		opts = append([]Option{WithNamespace(ns)}, opts...)
	}
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
// redis.UniversalClient, serves all three.
func ParseURL(raw string) (*goredis.UniversalOptions, string, error) {
	base, query, _ := strings.Cut(raw, "?")
	var ns, master string
	var addrs, rest []string
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "namespace":
			ns = v
			if ns == "" {
				return nil, "", errors.New("redis: store URL: ?namespace= names no namespace")
			}
		case "addr":
			addrs = append(addrs, v)
		case "master_name":
			master = v
		default:
			rest = append(rest, kv)
		}
	}
	if len(rest) > 0 {
		base += "?" + strings.Join(rest, "&")
	}
	o, err := goredis.ParseURL(base)
	if err != nil {
		// The error may repeat the URL, password and all.
		return nil, "", errors.New("redis: store URL: not a valid redis:// or rediss:// URL")
	}
	poolSize := o.PoolSize
	if !strings.Contains(query, "pool_size") {
		poolSize = PoolSizeDefault
	}
	uo := &goredis.UniversalOptions{
		Addrs: append([]string{o.Addr}, addrs...), DB: o.DB, Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, MasterName: master, PoolSize: poolSize, ClientName: o.ClientName,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: true,
		// go-redis asks for maintenance notifications on connect from v9.15, which OSS Redis
		// and Valkey refuse (redis/go-redis#3536).
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	return uo, ns, nil
}

// New returns a Store on a client the caller owns and closes after the Store: a *redis.Client,
// *redis.ClusterClient or failover client. It does no I/O.
func New(rdb goredis.UniversalClient, opts ...Option) (*Store, error) {
	cfg := config{namespace: NamespaceDefault, logger: slog.Default()}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.namespace == "" || strings.ContainsAny(cfg.namespace, "{}") {
		return nil, fmt.Errorf("redis: namespace %q: must be non-empty and hold no braces", cfg.namespace)
	}
	prefix := "rota:{" + cfg.namespace + "}:"
	s := &Store{
		rdb:     rdb,
		cfg:     cfg,
		prefix:  prefix,
		keys:    []string{prefix + "meta"},
		channel: prefix + "ev",
		origin:  rand.Text()[:16],
	}
	s.listener = newListener(s)
	return s, nil
}

// start loads the scripts and checks the namespace's version, or migrates when asked to.
func (s *Store) start(ctx context.Context) error {
	for _, sc := range allScripts {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return s.fail("open: load scripts", err)
		}
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
	if n, _ := strconv.Atoi(v); n > schemaVersion {
		return fmt.Errorf("redis: open: namespace %q at version %d, this build knows %d: %w",
			s.cfg.namespace, n, schemaVersion, store.ErrSchemaTooNew)
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
		s.listener.close()
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

// argv is a script's ARGV: the prefix, the time and the schema version, then args.
func (s *Store) argv(args []any) []any {
	return append([]any{s.prefix, s.nowArg(), schemaVersion}, args...)
}

// run runs sc with args after the common ARGV. Script.Run sends EVALSHA and, on NOSCRIPT (after
// SCRIPT FLUSH, a restart or a failover), EVAL with the source.
func (s *Store) run(ctx context.Context, sc *script, args ...any) (any, error) {
	var cmd *goredis.Cmd
	if sc.readOnly {
		cmd = sc.RunRO(ctx, s.rdb, s.keys, s.argv(args)...)
	} else {
		cmd = sc.Run(ctx, s.rdb, s.keys, s.argv(args)...)
	}
	v, err := cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(sc.name, err)
	}
	return v, nil
}
