package redis

import (
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// NamespaceDefault is the namespace a Store uses unless the URL or WithNamespace says otherwise.
const NamespaceDefault = "rota"

type config struct {
	namespace   string
	clock       clockwork.Clock
	logger      *slog.Logger
	pollOnly    bool
	autoMigrate bool

	allowEviction bool
	waitReplicas  int
	waitTimeout   time.Duration

	settleBatch int
}

// Option configures a Store.
type Option func(*config)

// WithNamespace keeps the store's keys under rota:{name}:, so several rota deployments can share
// one Redis. The braces are a Cluster hash tag: every key of a namespace is in one slot, which
// is what lets every transition be one script. The name must not be empty or hold braces.
func WithNamespace(name string) Option { return func(c *config) { c.namespace = name } }

// WithClock makes the store read the time from clock instead of Redis' TIME: every script that
// needs the time is sent clock.Now(). It is meant for tests in virtual time; in production the
// server's clock must decide, since it is the one clock all nodes share.
func WithClock(clock clockwork.Clock) Option { return func(c *config) { c.clock = clock } }

// WithLogger sets where the store logs (subscriber reconnects). Defaults to slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) {
		if logger != nil {
			c.logger = logger
		}
	}
}

// WithSettleBatch sets how many dependents one script settles (releases, counts off or
// cancels) when jobs end; what is left is settled by further calls, between which other
// clients' commands run. n <= 0 is SettleBatchDefault.
func WithSettleBatch(n int) Option {
	return func(c *config) {
		if n <= 0 {
			n = SettleBatchDefault
		}
		c.settleBatch = n
	}
}

// WithPollOnly keeps the store from holding a subscriber connection: Subscribe delivers nothing
// and nodes poll. Writes still publish, for nodes that do subscribe.
func WithPollOnly() Option { return func(c *config) { c.pollOnly = true } }

// WithAutoMigrate makes Open migrate the namespace (write its meta key when it has none).
// Without it, Open only checks that the namespace is not newer than this build, and migrating
// is an explicit step (Migrate, `rota migrate`): a node that migrated on every start would
// quietly rebuild a namespace that was flushed under it.
func WithAutoMigrate() Option { return func(c *config) { c.autoMigrate = true } }

// WithAllowEviction lets Open accept a server whose maxmemory-policy is allkeys-*. Such a server
// evicts any key when memory is full, jobs and their index entries included, silently: without
// this option Open refuses it (ErrEvictionPolicy). Use it only where losing jobs is acceptable,
// such as a cache-only Redis in development.
func WithAllowEviction() Option { return func(c *config) { c.allowEviction = true } }

// WaitTimeoutDefault is how long WithWaitReplicas (and wait_replicas= without wait_timeout=)
// waits for acknowledgements: replicas on a healthy network ack in about a millisecond, and a
// second is short enough that a node whose replica is gone learns it before its leases run out.
const WaitTimeoutDefault = time.Second

// WithWaitReplicas makes every state-changing script wait (WAIT n timeout, on the connection the
// script ran on) until n replicas acknowledged its writes. When fewer do within timeout, the
// call fails with an error wrapping ErrNotReplicated and store.ErrUnavailable, although the write
// was applied on the primary and stays there: an Insert that failed so inserted its jobs, so a
// producer that retries it should carry a unique key, and a Claim that failed so leaves its jobs
// running until their leases expire and they are rescued. WAIT narrows the window in which a
// failover loses acknowledged writes; it does not make Redis strongly consistent (a replica that
// acked may still not be the one promoted). n <= 0 turns waiting off; a timeout <= 0 is
// WaitTimeoutDefault (WAIT 0 would wait forever).
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(c *config) {
		if timeout <= 0 {
			timeout = WaitTimeoutDefault
		}
		c.waitReplicas, c.waitTimeout = max(n, 0), timeout
	}
}
