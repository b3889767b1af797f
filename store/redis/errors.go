package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/store"
)

// ErrNotMigrated is returned by every call on a namespace that has no meta key: it was never
// migrated, or it was flushed or lost. Scripts refuse to work there rather than start job ids
// at 1 again under nodes that still hold jobs of the old one.
var ErrNotMigrated = errors.New("namespace is not migrated (run rota migrate), or it was flushed")

// refusedRE matches a script's refusal of a call about one job: the insert of a job depending
// on one the store does not hold, or joining one that is not pending.
var refusedRE = regexp.MustCompile(`ROTA (NOTFOUND|NOTPENDING) (\d+)`)

// fail wraps err from script op with context, and marks it with store.ErrUnavailable when it is
// the server's trouble and may pass: a lost or refused connection, memory full, a server still
// loading or a read-only replica.
func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if m := refusedRE.FindStringSubmatch(msg); m != nil {
		what := store.ErrNotFound
		if m[1] == "NOTPENDING" {
			what = store.ErrNotPending
		}
		return fmt.Errorf("redis: %s: job %s: %w", op, m[2], what)
	}
	switch {
	case strings.Contains(msg, "ROTA NOTMIGRATED"):
		return fmt.Errorf("redis: %s: namespace %q: %w", op, s.cfg.namespace, ErrNotMigrated)
	case strings.Contains(msg, "ROTA TOONEW"):
		return fmt.Errorf("redis: %s: namespace %q: %w", op, s.cfg.namespace, store.ErrSchemaTooNew)
	case strings.Contains(msg, "WRONGTYPE"):
		return fmt.Errorf("redis: %s: a key of namespace %q holds a value of the wrong type (written by something other than rota?): %w",
			op, s.cfg.namespace, err)
	case strings.HasPrefix(msg, "OOM") || strings.Contains(msg, "OOM command not allowed"):
		return fmt.Errorf("redis: %s: %w: Redis is out of memory (maxmemory); nothing was written: %w", op, store.ErrUnavailable, err)
	}
	if unavailable(err) {
		return fmt.Errorf("redis: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("redis: %s: %w", op, err)
}

func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	for _, prefix := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS"} {
		if strings.HasPrefix(err.Error(), prefix) {
			return true
		}
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, goredis.ErrPoolTimeout)
}
