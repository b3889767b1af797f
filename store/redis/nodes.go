package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// RegisterNode stores the node as JSON in node:<id> and stamps its LastSeen, the store's time,
// as its score in the nodes zset.
func (s *Store) RegisterNode(ctx context.Context, n store.NodeInfo) error {
	n.LastSeen = time.Time{}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("redis: register node: %w", err)
	}
	_, err = s.run(ctx, scriptNodeRegister, n.ID, string(b))
	return err
}

// ListNodes returns every registered node, most recently seen first.
func (s *Store) ListNodes(ctx context.Context) ([]store.NodeInfo, error) {
	v, err := s.run(ctx, scriptNodeList)
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	out := make([]store.NodeInfo, 0, len(list))
	for _, x := range list {
		r, _ := x.([]any)
		if len(r) != 4 {
			return nil, fmt.Errorf("redis: list nodes: unexpected row %v", x)
		}
		var n store.NodeInfo
		if js := toStr(r[2]); js != "" {
			if err := json.Unmarshal([]byte(js), &n); err != nil {
				return nil, fmt.Errorf("redis: list nodes: node %s: %w", toStr(r[0]), err)
			}
		}
		n.ID = toStr(r[0])
		n.Running, _ = r[3].(int64)
		if n.LastSeen, err = fromMicros(toStr(r[1])); err != nil {
			return nil, fmt.Errorf("redis: list nodes: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}

// DeregisterNode removes a node that stopped cleanly.
func (s *Store) DeregisterNode(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	_, err := s.run(ctx, scriptNodeDelete, id, "")
	return err
}

// PruneNodes removes nodes last seen before the given time.
func (s *Store) PruneNodes(ctx context.Context, before time.Time) (int, error) {
	v, err := s.run(ctx, scriptNodeDelete, "", micros(before))
	if err != nil {
		return 0, err
	}
	return int(toInt(v)), nil
}
