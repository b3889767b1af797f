package rota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/internal/fleetstats"
	"github.com/rotahq/rota/store"
)

// A node counts its attempts per minute, queue and kind, from its own events, and adds the
// counts to the store every StatsInterval (store.StatsKeeper): the dashboard and the HTTP API of
// any node then show the whole fleet's throughput, start latencies and run durations. The
// leader prunes the rows past Retention.Stats.
const (
	// StatsIntervalDefault is how often a node adds its counts to the store: the most a
	// fleet-wide figure lags behind, and the most a node that dies loses.
	StatsIntervalDefault = 10 * time.Second
	// StatsRetentionDefault is how long the per-minute counts are kept.
	StatsRetentionDefault = 24 * time.Hour
)

// statsOutcome says which outcome events the counts tell apart.
var statsOutcome = map[EventType]fleetstats.Outcome{
	EventJobCompleted: fleetstats.Completed,
	EventJobFailed:    fleetstats.Failed,
	EventJobDiscarded: fleetstats.Discarded,
	EventJobCancelled: fleetstats.Cancelled,
}

// countEvent counts an attempt's start or end. It runs synchronously with every event.
func (n *Node) countEvent(ev Event) {
	if ev.Job == nil {
		return
	}
	if ev.Type == EventJobStarted {
		n.counts.Started(ev.At, ev.Job.Queue, ev.Job.Kind, ev.Latency)
		return
	}
	if how, ok := statsOutcome[ev.Type]; ok {
		n.counts.Ended(ev.At, ev.Job.Queue, ev.Job.Kind, how, ev.Duration)
	}
}

// FleetStats is the whole fleet's last minutes, summed from every node's counts in the store:
// attempts ended per minute, and per queue and per kind with percentiles of start latency and
// run duration. The figures lag the fleet by up to StatsInterval.
type FleetStats = fleetstats.Summary

// FleetMinute, FleetGroup and Percentiles are the parts of FleetStats.
type (
	FleetMinute = fleetstats.Minute
	FleetGroup  = fleetstats.Group
	Percentiles = fleetstats.Percentiles
)

// FleetFilter narrows FleetStats to one queue, one kind, or one kind in one queue; the zero
// value is the whole fleet. The minutes then count that part's attempts alone, and the groups
// are its queues and kinds.
type FleetFilter struct {
	Queue string
	Kind  string
}

// keeps reports whether a row of counts is of the part f names.
func (f FleetFilter) keeps(r store.Stats) bool {
	return (f.Queue == "" || r.Queue == f.Queue) && (f.Kind == "" || r.Kind == f.Kind)
}

// ErrNoStats is returned by FleetStats for a store that keeps no counts (store.StatsKeeper).
var ErrNoStats = errors.New("store keeps no fleet counts")

// FleetStats sums the fleet's counts of the last window (whole minutes, the current one
// included), judged by the store's clock where it keeps one, of the part of the fleet filter
// names.
func (c *Client) FleetStats(ctx context.Context, window time.Duration, filter FleetFilter) (*FleetStats, error) {
	keeper, ok := c.store.(store.StatsKeeper)
	if !ok {
		return nil, fmt.Errorf("rota: fleet stats: %w", ErrNoStats)
	}
	minutes := max(int(window/time.Minute), 1)
	now, err := storeTime(ctx, c.store, c.clock)
	if err != nil {
		return nil, fmtErr("fleet stats", err)
	}
	since := now.Truncate(time.Minute).Add(-time.Duration(minutes-1) * time.Minute)
	rows, err := keeper.Stats(ctx, since)
	if err != nil {
		return nil, fmtErr("fleet stats", err)
	}
	if filter != (FleetFilter{}) {
		rows = slices.DeleteFunc(rows, func(r store.Stats) bool { return !filter.keeps(r) })
	}
	s := fleetstats.Summarize(rows, now, minutes)
	return &s, nil
}
