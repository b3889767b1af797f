package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rotahq/rota/store"
)

// Rescue ends the attempts of running jobs whose lease expired, in two scripts: the first reads
// the candidates, Go decides each one's end with package store's policy (RescueState,
// RescueError), with a cancel requested and without, and the second applies it to every job
// that still runs under the fence read, with its lease still ended: a compare-and-set, so two
// rescues never rescue one job twice and no policy is copied into Lua. Whether a cancel was
// requested is read by the second script: a Cancel between the two would otherwise be lost.
func (s *Store) Rescue(ctx context.Context, limit int) ([]*store.JobRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	// Dependents a Store left parked, when it was closed or its process died while settling
	// them, are settled by the next rescue pass, on any node.
	if err := s.settleAll(ctx); err != nil {
		return nil, err
	}
	v, err := s.run(ctx, scriptRescueFind, limit)
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	if len(list) == 0 {
		return nil, nil
	}
	args := []any{len(list)}
	for _, x := range list {
		c, _ := x.([]any)
		if len(c) != 5 {
			return nil, fmt.Errorf("redis: rescue: unexpected candidate %v", x)
		}
		attempt, _ := strconv.Atoi(toStr(c[2]))
		maxAttempts, _ := strconv.Atoi(toStr(c[3]))
		state := store.RescueState(attempt, maxAttempts, false)
		cancelled := store.RescueState(attempt, maxAttempts, true)
		args = append(args, toStr(c[0]), toStr(c[1]), string(state), string(cancelled),
			jsonText(store.RescueError(toStr(c[4]))))
	}
	if s.betweenRescueScripts != nil {
		s.betweenRescueScripts()
	}
	v, err = s.run(ctx, scriptRescue, args...)
	if err != nil {
		return nil, err
	}
	rows, err := decodeJobs(v)
	if err != nil {
		return nil, fmt.Errorf("redis: rescue: %w", err)
	}
	return rows, nil
}
