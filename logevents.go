package rota

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/leader"
)

// storeErrorRepeat is how often a store call that keeps failing for the same reason is logged
// again: often enough that a log read at any moment shows the trouble is still there, rarely
// enough that a store refusing every claim (down, flushed, read-only) does not flood the log with
// one line per poll and wake-up.
const storeErrorRepeat = time.Minute

// eventLog turns the node's events into its log lines, so the log says what metrics count. It runs
// under the event hub's lock, which also guards its state.
type eventLog struct {
	logger  *slog.Logger
	clock   clockwork.Clock
	failing map[string]*failure // by store call (and queue, for claims)
}

// failure is a store call failing since a time, and what was logged of it.
type failure struct {
	reason string
	since  time.Time
	logged time.Time
	last   time.Time
	count  int
}

func newEventLog(logger *slog.Logger, clock clockwork.Clock) *eventLog {
	return &eventLog{logger: logger, clock: clock, failing: map[string]*failure{}}
}

func (l *eventLog) log(ev Event) {
	ctx := context.Background()
	switch ev.Type {
	case EventJobCompleted, EventJobSnoozed, EventJobHandedBack:
		l.outcomeWritten()
	case EventJobFailed:
		l.outcomeWritten()
		l.logger.Info("rota: job attempt failed", jobAttrs(ev, "error", ev.Error)...)
	case EventJobDiscarded:
		l.outcomeWritten()
		l.logger.Warn("rota: job discarded", jobAttrs(ev, "error", ev.Error)...)
	case EventJobFenceRefused:
		l.logger.Warn("rota: outcome ignored: the job's lease was lost and it belongs to another claim now",
			jobAttrs(ev, "fence", ev.Job.Fence, "outcome", ev.Outcome)...)
	case EventJobRescued:
		l.logger.Warn("rota: rescued job whose lease expired", jobAttrs(ev, "state", ev.Job.State)...)
	case EventJobCancelled:
		l.outcomeWritten()
		l.logger.Info("rota: job cancelled", jobAttrs(ev, "error", ev.Error)...)
	case EventJobAbandoned:
		l.logger.Error("rota: abandoning a handler that ignores its cancelled context",
			jobAttrs(ev, "cause", ev.Error, "ran", ev.Duration)...)
	case EventDrainDeadline:
		l.logger.Warn("rota: drain deadline passed; cancelling running jobs", "jobs", ev.Count)
	case EventOutcomesUnrecorded:
		msg := "rota: node stop: outcomes not recorded in time; the rescuer will retry those jobs"
		if ev.Reason == "deadline" {
			msg = "rota: node stop: outcomes not recorded before the stop deadline; the rescuer will retry those jobs"
		}
		l.logger.Error(msg, "pending", ev.Count)
	case EventNodeStarted:
		l.logger.Info("rota: node started", "queues", ev.Count, "kinds", ev.Kinds)
	case EventNodeStopped:
		l.logger.Info("rota: node stopped")
	case EventServiceState:
		l.serviceState(ev)
	case EventLeaderElected:
		l.logger.Info("rota: became leader", "lease", leader.NameDefault, "token", ev.Token)
	case EventLeaderLost:
		l.logger.Log(ctx, lossLevel(ev.Reason), "rota: lost leadership", "reason", ev.Reason)
	case EventSingletonAcquired:
		l.logger.Info("rota: singleton lease acquired", "reason", ev.Reason)
	case EventSingletonLost:
		l.logger.Log(ctx, lossLevel(ev.Reason), "rota: singleton lease lost", "reason", ev.Reason)
	case EventJobStarted:
		// Checked first: one per job, the attributes would cost an allocation each.
		if l.logger.Enabled(ctx, slog.LevelDebug) {
			l.logger.Debug("rota: job started", jobAttrs(ev, "latency", ev.Latency)...)
		}
	case EventJobClaimed:
		l.recovered("claim", ev.Queue)
		if ev.Claim.Got > 0 && l.logger.Enabled(ctx, slog.LevelDebug) {
			l.logger.Debug("rota: jobs claimed", "queue", ev.Queue, "asked", ev.Claim.Asked, "got", ev.Claim.Got, "duration", ev.Duration)
		}
	case EventServiceRun:
		if ev.Error != "" {
			// The store call that failed is a store.error of its own, logged at warn.
			l.logger.Debug("rota: maintenance run failed", "service", ev.Service, "error", ev.Error, "duration", ev.Duration)
			return
		}
		for _, op := range serviceOps[ev.Service] {
			l.recovered(op, "")
		}
		level := slog.LevelDebug
		if ev.Count > 0 && ev.Service != ServiceStats { // counts written every few seconds are no news
			level = slog.LevelInfo
		}
		l.logger.Log(ctx, level, "rota: maintenance run", "service", ev.Service, "count", ev.Count, "duration", ev.Duration)
	case EventStoreError:
		l.storeError(ev)
	case EventStoreReset:
		l.logger.Error("rota: " + ev.Reason)
	case EventMemoryLow:
		l.logger.Warn("rota: available memory below the floor; taking no new jobs", "reason", ev.Reason)
	case EventMemoryUnreadable:
		l.logger.Warn("rota: MinFreeMemory is set but free memory cannot be read here; ignoring it", "error", ev.Error)
	case EventMemoryOK:
		l.logger.Info("rota: available memory back above the floor; taking jobs again", "reason", ev.Reason)
	}
}

// serviceState logs a leader service's start, restart or failure to start or stop.
func (l *eventLog) serviceState(ev Event) {
	c := leader.ServiceChange{Service: ev.Service, What: ev.Reason, Token: ev.Token}
	if ev.Error != "" {
		c.Err = errors.New(ev.Error)
	}
	leader.LogServiceChange(l.logger, c)
}

// serviceOps are the store calls each maintenance service makes: a run that worked means they
// work again.
var serviceOps = map[string][]string{
	ServiceRescuer:  {"rescue"},
	ServicePruner:   {"prune", "prune_nodes", "prune_stats"},
	ServiceCron:     {"plan_schedules"},
	ServiceRegistry: {"register"},
	ServiceTidier:   {"tidy"},
	ServiceStats:    {"add_stats"},
}

// outcomeWritten says, once, that outcomes are written again after writes failed.
func (l *eventLog) outcomeWritten() {
	if len(l.failing) > 0 { // no lookup on the hot path while nothing fails
		l.recovered("complete", "")
	}
}

// lossLevel is how loud a lost lease is: a warning, unless the node is stopping.
func lossLevel(reason string) slog.Level {
	if strings.HasSuffix(reason, leader.ReasonStopping) {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func jobAttrs(ev Event, more ...any) []any {
	return append([]any{"job", ev.Job.ID, "kind", ev.Job.Kind, "queue", ev.Job.Queue, "attempt", ev.Job.Attempt}, more...)
}

func failureKey(op, queue string) string { return op + "\x00" + queue }

// storeError logs a failed store call: the first failure, a new reason, and the same reason again
// after storeErrorRepeat.
func (l *eventLog) storeError(ev Event) {
	now := l.clock.Now()
	key := failureKey(ev.Op, ev.Queue)
	f := l.failing[key]
	// Calls with no event of their own for success (heartbeat, list_limits) are taken to have
	// recovered after a quiet spell: a failure then starts a new count.
	if f == nil || now.Sub(f.last) >= 2*storeErrorRepeat {
		f = &failure{since: now}
		l.failing[key] = f
	}
	f.count++
	f.last = now
	if ev.Error == f.reason && now.Sub(f.logged) < storeErrorRepeat {
		return
	}
	f.reason, f.logged = ev.Error, now
	attrs := []any{"op", ev.Op, "error", ev.Error, "failing_since", f.since, "failures", f.count}
	if ev.Op == "complete" {
		attrs = append(attrs, "jobs", ev.Count, "next", ev.Reason)
	}
	if ev.Queue != "" {
		attrs = append(attrs, "queue", ev.Queue)
	}
	msg, ok := storeErrorMessages[ev.Op]
	if !ok {
		msg = "rota: store call failed; will retry"
	}
	l.logger.Warn(msg, attrs...)
}

// storeErrorMessages say what a failed store call means for the node.
var storeErrorMessages = map[string]string{
	"claim":                   "rota: claim failed; will retry at the next poll",
	"heartbeat":               "rota: heartbeat failed; leases lapse if the store stays away",
	"subscribe":               "rota: cannot subscribe to notifications; polling only for now",
	"deregister":              "rota: deregistering node failed; the leader will prune it",
	"complete":                "rota: recording job outcomes failed; retrying, their jobs' leases held meanwhile",
	"identity":                "rota: reading the store's identity failed; leader election waits for it",
	"lease":                   "rota: leader lease call failed; a leader steps down if it cannot renew in time",
	"release_lease":           "rota: releasing the leader lease failed; it will expire",
	"singleton_lease":         "rota: singleton lease call failed; its kinds wait while it is not held",
	"singleton_release_lease": "rota: releasing a singleton lease failed; it will expire",
	"rescue":                  "rota: rescue failed; will retry at the next pass",
	"prune":                   "rota: pruning finished jobs failed; will retry at the next pass",
	"prune_nodes":             "rota: pruning stale nodes failed; will retry at the next pass",
	"plan_schedules":          "rota: cron: planning failed; will retry at the next pass",
}

// recovered says once that a store call that was failing works again.
func (l *eventLog) recovered(op, queue string) {
	key := failureKey(op, queue)
	f := l.failing[key]
	if f == nil {
		return
	}
	delete(l.failing, key)
	attrs := []any{"op", op, "failing_since", f.since, "failures", f.count}
	if queue != "" {
		attrs = append(attrs, "queue", queue)
	}
	l.logger.Info("rota: store call works again", attrs...)
}
