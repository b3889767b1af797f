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
		parts := strings.Split(spec, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("redis: list limits: limit %s: bad value %q", key, spec)
		}
		mx, _ := strconv.Atoi(parts[0])
		rate, _ := strconv.Atoi(parts[1])
		per, _ := strconv.ParseInt(parts[2], 10, 64)
		out = append(out, store.Limit{Scope: store.LimitScope(scope), Name: name, MaxRunning: mx, Rate: rate,
			Period: time.Duration(per) * time.Microsecond})
	}
	slices.SortFunc(out, func(a, b store.Limit) int {
		return strings.Compare(string(a.Scope)+"\x00"+a.Name, string(b.Scope)+"\x00"+b.Name)
	})
	return out, nil
}
