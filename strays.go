package rota

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/rotahq/rota/store"
)

// strays are jobs the store shows running under this node that the node does not run. A claim
// whose answer was lost (its connection broke after the commit, as PostgreSQL's and Redis' can)
// leaves its jobs so, and so does a process that ran under the same id before this one and died
// (an id kept across restarts); the heartbeat, which renews every job the store lists under the
// node's name, would keep them running nowhere for as long as the node has other work: never
// run, never rescued.
//
// So after the node starts and after a claim fails, each heartbeat lists the node's running
// jobs, and one found running nowhere (not running here, its outcome not waiting to be written)
// at two heartbeats in a row, under the same fence, goes back to its queue: with its attempt
// refunded when this process claimed it (it never ran), or as a rescue ends it when an earlier
// process did (it ran, and may be what killed that process: the attempt counts). Two looks, so
// that the jobs of a claim whose answer is on its way to another of the node's queues are not
// taken for strays.
type strays struct {
	// lost counts the claims that failed since the node last found no stray; a look that
	// finds none sets it back to zero, unless a claim failed meanwhile.
	lost atomic.Int64
	// seen holds the jobs the last look found running nowhere: by id, their fences. Only the
	// heartbeat's goroutine reads and writes it.
	seen map[int64]int64
}

// straysPage is how many of the node's running jobs one List call reads.
const straysPage = 1000

// handBackStrays looks for strays when a claim failed since the last look that found none, and
// hands back those the look before found too.
func (n *Node) handBackStrays(ctx context.Context) {
	lost := n.strays.lost.Load()
	if lost == 0 {
		return
	}
	var held []*store.JobRow
	for after := int64(0); ; {
		page, err := n.cfg.Store.List(ctx, store.ListParams{States: []State{StateRunning}, Owner: n.cfg.ID,
			AfterID: after, Limit: straysPage})
		if err != nil {
			n.storeError(ctx, "list_strays", "", err)
			return
		}
		held = append(held, page...)
		if len(page) < straysPage {
			break
		}
		after = page[len(page)-1].ID
	}
	seen := make(map[int64]int64)
	var back []*store.JobRow
	var nowhere []*store.JobRow
	n.mu.Lock()
	for _, row := range held {
		if e := n.running[row.ID]; e == nil || e.row.Fence != row.Fence {
			nowhere = append(nowhere, row)
		}
	}
	n.mu.Unlock()
	for _, row := range nowhere {
		if n.completer.Holds(row.ID, row.Fence) {
			continue // ended here; its outcome is being written
		}
		if fence, ok := n.strays.seen[row.ID]; ok && fence == row.Fence {
			back = append(back, row)
			continue
		}
		seen[row.ID] = row.Fence
	}
	n.strays.seen = seen
	if len(seen) == 0 && len(back) == 0 {
		n.strays.lost.CompareAndSwap(lost, 0)
	}
	if len(back) == 0 {
		return
	}
	var unanswered, earlier []int64
	for _, row := range back {
		if row.AttemptedAt.Before(n.startedAt) {
			earlier = append(earlier, row.ID)
			n.completer.Add(n.restartedOutcome(row), nil)
			continue
		}
		unanswered = append(unanswered, row.ID)
		n.completer.Add(store.Outcome{ID: row.ID, Fence: row.Fence, State: StateAvailable, RefundAttempt: true}, nil)
	}
	if len(unanswered) > 0 {
		n.logger.Warn("rota: handing back jobs a claim whose answer was lost left running under this node",
			slog.Any("jobs", unanswered))
	}
	if len(earlier) > 0 {
		n.logger.Warn("rota: ending the attempts of jobs an earlier process with this node's id left running",
			slog.Any("jobs", earlier))
	}
}

// restartedOutcome ends the attempt of row, which an earlier process under this node's id was
// running when it died, as the rescuer would once its lease ran out: failed, retried at once
// while it has attempts left.
func (n *Node) restartedOutcome(row *store.JobRow) store.Outcome {
	return store.Outcome{ID: row.ID, Fence: row.Fence,
		State: store.RescueState(row.Attempt, row.MaxAttempts, row.CancelRequested),
		Error: &store.AttemptError{Attempt: row.Attempt, At: n.clock.Now(),
			Error: "node " + n.cfg.ID + " restarted while it ran the job"}}
}
