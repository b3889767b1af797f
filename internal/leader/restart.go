package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// Restart requests travel through the store so that any node (or a CLI) can ask the leader, wherever
// it runs, to restart a service after its settings changed. Each service has a lease named
// RestartLeasePrefix+name used as a counter: a request takes it for an instant under a fresh owner,
// which bumps its token, and the leader restarts the service when it sees the token move. No new
// store table or notification channel is needed. A request made while no node leads is taken as
// the baseline by the next leader, which starts every service fresh anyway.

// RestartLeasePrefix names the leases that count restart requests.
const RestartLeasePrefix = "rota.restart:"

// RequestRestart asks the leader, wherever it runs, to restart the named service.
func RequestRestart(ctx context.Context, leaser store.Leaser, name string) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if _, _, err := leaser.AcquireLease(ctx, RestartLeasePrefix+name, "restart-"+hex.EncodeToString(b[:]), time.Microsecond); err != nil {
		return fmt.Errorf("request restart of %s: %w", name, err)
	}
	return nil
}

// checkRestarts restarts the services whose restart counter moved since the last look. The first
// look only records the counters: a new leader starts every service fresh anyway.
func (e *Elector) checkRestarts(ctx context.Context) {
	if e.cfg.Leaser == nil {
		return
	}
	for _, name := range e.services.names() {
		lease, err := e.cfg.Leaser.GetLease(ctx, RestartLeasePrefix+name)
		if errors.Is(err, store.ErrNotFound) {
			lease.Token = 0
		} else if err != nil {
			e.fail(OpRestarts, fmt.Errorf("%s: %w", name, err), "rota: reading restart requests failed")
			continue
		}
		seen, known := e.restartTokens[name]
		e.restartTokens[name] = lease.Token
		if known && lease.Token != seen {
			e.services.requestRestart(name)
		}
	}
}
