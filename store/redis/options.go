package redis

import (
	"log/slog"

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

// WithPollOnly keeps the store from holding a subscriber connection: Subscribe delivers nothing
// and nodes poll. Writes still publish, for nodes that do subscribe.
func WithPollOnly() Option { return func(c *config) { c.pollOnly = true } }

// WithAutoMigrate makes Open migrate the namespace (write its meta key when it has none).
// Without it, Open only checks that the namespace is not newer than this build, and migrating
// is an explicit step (Migrate, `rota migrate`): a node that migrated on every start would
// quietly rebuild a namespace that was flushed under it.
func WithAutoMigrate() Option { return func(c *config) { c.autoMigrate = true } }
