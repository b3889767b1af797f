package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/claimorder"
)

// Claim takes jobs in one script (lua/claim.lua): it expires and promotes the queue's due jobs,
// plans the claim under the limits that apply, and merges the heads of the (queue, kind) ready
// sets of the kinds asked for, so a node never steps over jobs of kinds it does not run.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if len(p.Kinds) == 0 || p.Max <= 0 {
		return nil, nil
	}
	args := []any{p.Queue, p.Owner, p.LeaseFor.Microseconds(), p.Max, len(p.Kinds)}
	for _, k := range p.Kinds {
		args = append(args, k)
	}
	v, err := s.run(ctx, scriptClaim, args...)
	if err != nil {
		return nil, err
	}
	rows, err := decodeJobs(v)
	if err != nil {
		return nil, fmt.Errorf("redis: claim: %w", err)
	}
	claimorder.Sort(rows)
	return rows, nil
}

// Heartbeat extends the leases of the owner's running jobs in one script.
func (s *Store) Heartbeat(ctx context.Context, owner string, leaseFor time.Duration) ([]int64, error) {
	v, err := s.run(ctx, scriptHeartbeat, owner, leaseFor.Microseconds())
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	out := make([]int64, 0, len(list))
	for _, x := range list {
		out = append(out, toInt(x))
	}
	sortIDs(out)
	return out, nil
}
