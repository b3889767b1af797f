// Package leader elects one node of a fleet as leader through a lease in the store, and runs the
// leader-only services there.
//
// The elector is a two-state machine:
//
//	follower ──(AcquireLease: held)──▶ leader
//	   ▲                                 │ renew every RenewEvery
//	   └──(lease taken by another, renew deadline passed, store reset, stop)──┘
//
// Safety rests on one inequality. The store judges the lease by its own clock and expires it at
// (its time when it received the renewal) + TTL, which is never earlier than (the time this node
// sent the renewal) + TTL. The elector steps down at (send time of its last successful renewal) +
// RenewDeadline, measured on the node's monotonic clock, with RenewDeadline < TTL. So a leader
// that cannot renew has stopped its services before the store can hand the lease to anyone else,
// as long as the two clocks run at the same rate. A process paused longer than the margin (a GC
// or VM stall) can still act late: that is why the lease carries a fencing token, and why work
// done under it should carry the token too.
//
// The elector never trusts a lease across a store reset: it remembers the store's identity and,
// when it changes (database recreated, Redis flushed), steps down and starts over as a follower.
package leader

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/internal/clockctx"
	"github.com/rotahq/rota/store"
)

// Defaults for Config, chosen so a dead leader is replaced within one TTL plus one try (40 s)
// while a healthy one writes to the store only every 10 s.
const (
	NameDefault       = "rota.leader"
	TTLDefault        = 30 * time.Second
	RenewEveryDefault = 10 * time.Second
	TryEveryDefault   = 10 * time.Second
)

// Config configures an Elector.
type Config struct {
	// Leaser holds the lease; nil means standalone.
	Leaser store.Leaser
	// Identity returns the store's identity; a change means the store was reset.
	Identity func(ctx context.Context) (string, error)
	// Name of the lease. Defaults to NameDefault.
	Name  string
	Owner string
	// TTL of the lease. Defaults to TTLDefault.
	TTL time.Duration
	// RenewEvery is how often the leader renews. Defaults to RenewEveryDefault.
	RenewEvery time.Duration
	// TryEvery is how often a follower tries to take the lease. Defaults to TryEveryDefault.
	TryEvery time.Duration
	// RenewDeadline is how long after its last successful renewal was sent a leader steps down.
	// Must be below TTL. Defaults to TTL - RenewEvery/2, which tolerates one failed renewal.
	RenewDeadline time.Duration
	// Standalone makes this process leader at once, without a lease: for a single process that
	// owns its store.
	Standalone bool
	Clock      clockwork.Clock
	// Logger says what the elector does where no callback below is set, and what its leader
	// services do.
	Logger *slog.Logger
	// OnChange is called on every change of leadership, from the elector's goroutine; when set,
	// the elector does not log the changes itself.
	OnChange func(Change)
	// OnReset is called when the store's identity changed (it was flushed, restored or
	// replaced), with why leases taken before prove nothing; when set, the elector does not log
	// it itself.
	OnReset func(reason string)
	// OnError is called with every failed store call of the elector (op: OpIdentity, OpLease,
	// OpRelease); when set, the elector does not log them itself.
	OnError func(op string, err error)
	// OnService is called when a leader service starts, fails to start or to stop, or is
	// restarted on request; when set, the elector does not log these itself.
	OnService func(ServiceChange)
}

// ServiceChange is a leader service starting, failing to start or stop, or restarting.
type ServiceChange struct {
	Service string
	What    string // ServiceStarted, ServiceStartFailed, ServiceStopFailed, ServiceRestarting
	Token   int64  // the lease token it started under (ServiceStarted)
	Err     error  // why it failed
}

// What a ServiceChange says.
const (
	ServiceStarted     = "started"
	ServiceStartFailed = "start_failed" // retried at the next renewal
	ServiceStopFailed  = "stop_failed"
	ServiceRestarting  = "restarting"
)

// The store calls of an elector, as OnError names them.
const (
	OpIdentity = "identity"         // reading the store's identity before each lease call
	OpLease    = "lease"            // taking or renewing the lease
	OpRelease  = "release_lease"    // giving the lease up on stop
	OpRestarts = "restart_requests" // reading the leader services' restart requests
)

// Change is a gain or loss of leadership.
type Change struct {
	Leader bool
	// Token is the lease's fencing token while leader.
	Token  int64
	Reason string
	At     time.Time
}

// Elector campaigns for the lease and runs services while it holds it.
type Elector struct {
	cfg      Config
	services *services

	mu     sync.Mutex
	leader bool
	token  int64

	identity string
	deadline time.Time
	// restartTokens holds the restart counter of each service as last seen while leading.
	restartTokens map[string]int64
}

// New returns an Elector; add services before Run.
func New(cfg Config) (*Elector, error) {
	if cfg.Name == "" {
		cfg.Name = NameDefault
	}
	if cfg.TTL <= 0 {
		cfg.TTL = TTLDefault
	}
	if cfg.RenewEvery <= 0 {
		cfg.RenewEvery = RenewEveryDefault
	}
	if cfg.TryEvery <= 0 {
		cfg.TryEvery = TryEveryDefault
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = cfg.TTL - cfg.RenewEvery/2
	}
	if cfg.RenewDeadline >= cfg.TTL || cfg.RenewEvery >= cfg.RenewDeadline {
		return nil, fmt.Errorf("leader: need RenewEvery (%v) < RenewDeadline (%v) < TTL (%v)", cfg.RenewEvery, cfg.RenewDeadline, cfg.TTL)
	}
	if cfg.Leaser == nil {
		cfg.Standalone = true
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Elector{cfg: cfg, services: newServices(cfg.Logger, cfg.OnService)}, nil
}

// Add registers a service to run while this node leads. Call before Run.
func (e *Elector) Add(s Service) { e.services.add(s) }

// Restart stops and starts the named service if this node leads (after a settings change).
func (e *Elector) Restart(name string) { e.services.requestRestart(name) }

// Leader reports whether this node leads, and the lease token it leads with.
func (e *Elector) Leader() (bool, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader, e.token
}

// Run campaigns until ctx ends, then stops the services and releases the lease.
func (e *Elector) Run(ctx context.Context) {
	if e.cfg.Standalone {
		e.runStandalone(ctx)
		return
	}
	tick := e.cfg.Clock.NewTimer(0)
	defer tick.Stop()
	var expire clockwork.Timer
	for {
		var expired <-chan time.Time
		if expire != nil {
			expired = expire.Chan()
		}
		select {
		case <-ctx.Done():
			e.stepDown(ReasonStopping)
			e.release()
			return
		case <-expired:
			expire = nil
			e.expire()
			tick.Reset(e.cfg.TryEvery)
			continue
		case <-e.services.restartRequested():
			leading, token := e.Leader()
			e.services.restartPending(ctx, leading, token)
			continue
		case <-tick.Chan():
		}
		next := e.round(ctx)
		if leader, _ := e.Leader(); leader {
			if expire == nil {
				expire = e.cfg.Clock.NewTimer(e.cfg.Clock.Until(e.deadline))
			} else {
				expire.Reset(e.cfg.Clock.Until(e.deadline))
			}
		} else if expire != nil {
			expire.Stop()
			expire = nil
		}
		tick.Reset(next)
	}
}

// round makes one attempt to take or renew the lease and returns when to try next.
func (e *Elector) round(ctx context.Context) time.Duration {
	leader, token := e.Leader()
	interval := e.cfg.TryEvery
	if leader {
		interval = e.cfg.RenewEvery
	}
	deadline := e.cfg.Clock.Now().Add(interval)
	if leader && e.deadline.Before(deadline) {
		deadline = e.deadline // a call still blocked at the step-down deadline must not let us act past it
	}
	callCtx, cancel := clockctx.WithDeadline(ctx, e.cfg.Clock, deadline)
	defer cancel()
	if reset, err := e.storeWasReset(callCtx); err != nil {
		e.fail(OpIdentity, err, "rota: leader election: cannot read store identity")
		return interval
	} else if reset != "" {
		e.stepDown(reset)
		return e.cfg.TryEvery
	}
	sent := e.cfg.Clock.Now()
	lease, held, err := e.cfg.Leaser.AcquireLease(callCtx, e.cfg.Name, e.cfg.Owner, e.cfg.TTL)
	switch {
	case err != nil:
		e.fail(OpLease, err, "rota: leader election: lease call failed")
	case !held:
		if leader {
			e.stepDown("lease taken by " + lease.Owner)
		}
		return e.cfg.TryEvery
	default:
		e.deadline = sent.Add(e.cfg.RenewDeadline)
		if leader && lease.Token != token {
			// The lease passed to another owner and came back between two renewals (a pause
			// longer than the lease, clocks apart): the services run under a token whose fenced
			// writes the store now refuses. Start them over under the new one.
			e.stepDown("the lease changed hands between two renewals")
			leader = false
		}
		if !leader {
			e.become(lease.Token)
			e.restartTokens = map[string]int64{}
		}
		e.checkRestarts(callCtx)
		e.services.startPending(ctx, lease.Token)
		return e.cfg.RenewEvery
	}
	return interval
}

// storeWasReset returns why the node must not trust its lease, or "" when the store is the one
// it knew. The first identity read is remembered.
func (e *Elector) storeWasReset(ctx context.Context) (string, error) {
	if e.cfg.Identity == nil {
		return "", nil
	}
	id, err := e.cfg.Identity(ctx)
	if err != nil {
		return "", err
	}
	if e.identity == "" || e.identity == id {
		e.identity = id
		return "", nil
	}
	reason := fmt.Sprintf("store identity changed from %s to %s: the store was reset, leases taken before prove nothing", e.identity, id)
	if e.cfg.OnReset != nil {
		e.cfg.OnReset(reason)
	} else {
		e.cfg.Logger.Error("rota: " + reason)
	}
	e.identity = id
	return reason, nil
}

// expire steps down because the renew deadline passed without a successful renewal.
func (e *Elector) expire() {
	e.stepDown(fmt.Sprintf("lease not renewed within %v", e.cfg.RenewDeadline))
}

func (e *Elector) become(token int64) {
	e.mu.Lock()
	e.leader, e.token = true, token
	e.mu.Unlock()
	if e.cfg.OnChange == nil {
		e.cfg.Logger.Info("rota: became leader", "lease", e.cfg.Name, "token", token)
	}
	e.notify(Change{Leader: true, Token: token, Reason: "lease acquired", At: e.cfg.Clock.Now()})
}

func (e *Elector) stepDown(reason string) {
	e.mu.Lock()
	was := e.leader
	e.leader, e.token = false, 0
	e.mu.Unlock()
	if !was {
		return
	}
	e.services.stopAll()
	if e.cfg.OnChange == nil {
		level := slog.LevelWarn
		if reason == ReasonStopping {
			level = slog.LevelInfo
		}
		e.cfg.Logger.Log(context.Background(), level, "rota: lost leadership", "reason", reason)
	}
	e.notify(Change{Leader: false, Reason: reason, At: e.cfg.Clock.Now()})
}

func (e *Elector) release() {
	if e.cfg.Leaser == nil {
		return
	}
	ctx, cancel := clockctx.WithTimeout(context.Background(), e.cfg.Clock, e.cfg.RenewEvery)
	defer cancel()
	// ctx ends only by its timeout, whose Err is context.Canceled (clockctx cancels with a
	// cause): every error here is worth the warning.
	if err := e.cfg.Leaser.ReleaseLease(ctx, e.cfg.Name, e.cfg.Owner); err != nil {
		e.fail(OpRelease, err, "rota: releasing the leader lease failed; it will expire")
	}
}

func (e *Elector) notify(c Change) {
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(c)
	}
}

// runStandalone leads at once and retries failed service starts every RenewEvery.
func (e *Elector) runStandalone(ctx context.Context) {
	e.become(0)
	tick := e.cfg.Clock.NewTicker(e.cfg.RenewEvery)
	defer tick.Stop()
	for {
		e.services.startPending(ctx, 0)
		select {
		case <-ctx.Done():
			e.stepDown(ReasonStopping)
			return
		case <-e.services.restartRequested():
			e.services.restartPending(ctx, true, 0)
		case <-tick.Chan():
		}
	}
}

// ReasonStopping is the step-down reason of a node that stops: expected, so not a warning.
const ReasonStopping = "node stopping"

// fail reports a failed store call to OnError, or logs it with msg.
func (e *Elector) fail(op string, err error, msg string) {
	if e.cfg.OnError != nil {
		e.cfg.OnError(op, err)
		return
	}
	e.cfg.Logger.Warn(msg, "error", err)
}
