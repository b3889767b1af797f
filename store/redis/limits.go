package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
)

// SetLimit stores l in the lim hash as "max,rate,period_µs". A limit without a Rate (or removed)
// forgets its starts, so a Rate given again begins with an empty window.
func (s *Store) SetLimit(ctx context.Context, l store.Limit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	spec := ""
	if !l.Removes() {
		spec = fmt.Sprintf("%d,%d,%d", l.MaxRunning, l.Rate, l.Period.Microseconds())
	}
	noRate := ""
	if l.Rate == 0 {
		noRate = "1"
	}
	_, err := s.run(ctx, scriptLimitSet, string(l.Scope)+":"+l.Name, spec, noRate)
	return err
}

// ListLimits returns every limit, by scope then name in byte order.
func (s *Store) ListLimits(ctx context.Context) ([]store.Limit, error) {
	v, err := s.run(ctx, scriptLimitList)
	if err != nil {
		return nil, err
	}
	m, err := fields(v)
	if err != nil {
		return nil, fmt.Errorf("redis: list limits: %w", err)
	}
	out := make([]store.Limit, 0, len(m))
	for key, spec := range m {
		scope, name, _ := strings.Cut(key, ":")
		l, err := parseLimit(scope, name, spec)
		if err != nil {
			return nil, fmt.Errorf("redis: list limits: %w", err)
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b store.Limit) int {
		return strings.Compare(string(a.Scope)+"\x00"+a.Name, string(b.Scope)+"\x00"+b.Name)
	})
	return out, nil
}

// parseLimit reads a limit of the lim hash: its value is "max,rate,period_µs".
func parseLimit(scope, name, spec string) (store.Limit, error) {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return store.Limit{}, fmt.Errorf("limit %s:%s: bad value %q", scope, name, spec)
	}
	mx, _ := strconv.Atoi(parts[0])
	rate, _ := strconv.Atoi(parts[1])
	per, _ := strconv.ParseInt(parts[2], 10, 64)
	return store.Limit{Scope: store.LimitScope(scope), Name: name, MaxRunning: mx, Rate: rate,
		Period: time.Duration(per) * time.Microsecond}, nil
}

// LimitUsage returns the queue's and the kind's limits with what counts against them now.
func (s *Store) LimitUsage(ctx context.Context, queue, kind string) ([]store.LimitUsage, error) {
	v, err := s.run(ctx, scriptLimitUsage, queue, kind)
	if err != nil {
		return nil, err
	}
	rows, _ := v.([]any)
	out := make([]store.LimitUsage, 0, len(rows))
	for _, r := range rows {
		f, _ := r.([]any)
		if len(f) != 5 {
			return nil, fmt.Errorf("redis: limit usage: bad reply %v", r)
		}
		scope, _ := f[0].(string)
		name, _ := f[1].(string)
		spec, _ := f[2].(string)
		running, _ := f[3].(int64)
		started, _ := f[4].(int64)
		l, err := parseLimit(scope, name, spec)
		if err != nil {
			return nil, fmt.Errorf("redis: limit usage: %w", err)
		}
		out = append(out, store.LimitUsage{Limit: l, Running: int(running), Started: int(started)})
	}
	return out, nil
}
