package maintenance

import (
	"context"
	"time"

	"github.com/rotahq/rota/store"
)

// Registry keeps a node's row in the node registry fresh, and removes it when the node stops;
// the pruner forgets the rows of nodes that could not.
type Registry struct {
	Nodes interface {
		RegisterNode(ctx context.Context, n store.NodeInfo) error
		DeregisterNode(ctx context.Context, id string) error
	}
	Info   store.NodeInfo
	Failed Failed
}

// Service is the registry refreshing the row every every.
func (r *Registry) Service(name string, every time.Duration) Service {
	return Service{Name: name, Every: every, Pass: r.pass, Last: r.last}
}

func (r *Registry) pass(ctx context.Context) (int, error) {
	err := r.Nodes.RegisterNode(ctx, r.Info)
	if err != nil {
		r.Failed(ctx, "register", err)
	}
	return 0, err
}

func (r *Registry) last(ctx context.Context) {
	if err := r.Nodes.DeregisterNode(ctx, r.Info.ID); err != nil {
		r.Failed(ctx, "deregister", err) // the leader will prune the row
	}
}
