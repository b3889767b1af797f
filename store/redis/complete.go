package redis

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/outcome"
)

// completeChunk bounds the outcomes of one script, so one call stalls Redis a few ms at most.
const completeChunk = 500

// Complete applies outcomes in their order, in one script, or for large batches in one
// MULTI/EXEC of several (which keeps their order and atomicity).
func (s *Store) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	if err := outcome.Validate(outcomes); err != nil {
		return nil, err
	}
	if len(outcomes) == 0 {
		return nil, nil
	}
	var replies []any
	if len(outcomes) <= completeChunk {
		v, err := s.run(ctx, scriptComplete, s.completeArgs(outcomes)...)
		if err != nil {
			return nil, err
		}
		replies = []any{v}
	} else {
		var parked bool
		var err error
		if replies, parked, err = s.completeMulti(ctx, outcomes); err != nil {
			return nil, err
		}
		if parked {
			s.afterParked(ctx, scriptComplete)
		}
	}
	applied := make([]bool, 0, len(outcomes))
	for _, v := range replies {
		list, _ := v.([]any)
		for _, x := range list {
			applied = append(applied, toInt(x) == 1)
		}
	}
	return applied, nil
}

// completeMulti runs the complete script once per chunk of outcomes, in one MULTI/EXEC, and
// returns the scripts' replies and whether any left dependents parked.
func (s *Store) completeMulti(ctx context.Context, outcomes []store.Outcome) ([]any, bool, error) {
	var calls [][]any
	for i := 0; i < len(outcomes); i += completeChunk {
		calls = append(calls, s.completeArgs(outcomes[i:min(i+completeChunk, len(outcomes))]))
	}
	return s.multi(ctx, scriptComplete, "complete", calls)
}

// completeArgs is the complete script's ARGV: the count, the state of a bare completion and
// what a cancel request makes of it, then the outcomes. A bare completion (completed, with no
// error, result, refund or run-at) is "c", id, fence, or, for a run of them whose claims left
// hints alike (hints.go), "g", their number, the hint's queue, kind, workflow and owner, then
// each one's id and fence; any other outcome is "o" and 11 fields. Nearly every outcome of a
// busy node is bare, and each argument costs Redis a string in Lua. The store package decides
// what a cancel request makes of the outcome (CancelRequestedState) and what a zero RunAt means
// (outcome.RunAt); the script only picks.
func (s *Store) completeArgs(outcomes []store.Outcome) []any {
	args := make([]any, 0, 3+3*len(outcomes))
	args = append(args, len(outcomes), string(store.StateCompleted), string(store.CancelRequestedState(store.StateCompleted)))
	hints := s.hints.take(outcomes)
	var last hintFields
	count := -1 // where the open run's count is in args; -1 when none is open
	for i, o := range outcomes {
		if outcome.Bare(&o) {
			hint := hints[i]
			if !hint.ok {
				count = -1
				args = append(args, "c", o.ID, o.Fence)
				continue
			}
			if count < 0 || hint.hintFields != last {
				last, count = hint.hintFields, len(args)+1
				args = append(args, "g", 0, hint.queue, hint.kind, hint.workflow, hint.owner)
			}
			args[count] = args[count].(int) + 1
			args = append(args, o.ID, o.Fence)
			continue
		}
		count = -1
		runAt := ""
		if at, now := outcome.RunAt(o); now {
			runAt = "now"
		} else if !at.IsZero() {
			runAt = micros(at)
		}
		refund := ""
		if o.RefundAttempt {
			refund = "1"
		}
		var text, trace, at string
		if o.Error != nil {
			e := store.PortableError(*o.Error)
			text = jsonText(e.Error)
			if e.Trace != "" {
				trace = jsonText(e.Trace)
			}
			at = microsOrEmpty(e.At)
		}
		hasResult := ""
		var result []byte
		if len(o.Result) > 0 {
			hasResult, result = "1", jsonResult(o.Result)
		}
		args = append(args, "o", o.ID, o.Fence, string(o.State), string(store.CancelRequestedState(o.State)),
			runAt, refund, text, trace, at, hasResult, string(result))
	}
	return args
}

// jsonResult is a result as the store keeps it: JSON as given, anything else as a JSON string,
// so that a reader always gets JSON.
func jsonResult(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

func sortIDs(ids []int64) { slices.Sort(ids) }
