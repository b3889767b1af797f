// Package chanloop holds the loop that consumers of a node's events share.
package chanloop

import "context"

// Each calls f with every value received from ch, in order, until ch is closed or ctx ends.
func Each[T any](ctx context.Context, ch <-chan T, f func(T)) {
	for {
		select {
		case <-ctx.Done():
			return
		case v, ok := <-ch:
			if !ok {
				return
			}
			f(v)
		}
	}
}
