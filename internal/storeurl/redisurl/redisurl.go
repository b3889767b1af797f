// Package redisurl registers the Redis store with package storeurl, under the schemes redis and
// rediss (TLS). Import it for its effect. A URL names the namespace rota's keys live under with
// ?namespace=NAME (default "rota"), so several deployments can share one Redis; addr=host:port
// parameters add Cluster seed nodes, master_name=NAME names a Sentinel master, allow_eviction,
// wait_replicas and wait_timeout set the store's options of those names (see
// store/redis.ParseURL). Opening a location does not migrate the namespace: that is for
// `rota migrate` to do, once, so that a node starting on a flushed namespace is refused instead
// of quietly rebuilding it.
package redisurl

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/redis"
)

// Kind is the canonical scheme Redis locations carry.
const Kind = "redis"

func init() {
	b := storeurl.Backend{Kind: Kind, Usage: "redis://…", Parse: parse, Open: open}
	storeurl.Register("redis", b)
	storeurl.Register("rediss", b)
}

// parse checks the URL and takes rota's namespace parameter out of it, into Location.Schema.
func parse(raw string) (storeurl.Location, error) {
	_, ns, err := redis.ParseURL(raw)
	if err != nil {
		return storeurl.Location{}, errors.New("store URL: not a valid redis:// or rediss:// URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return storeurl.Location{}, errors.New("store URL: not a valid redis:// or rediss:// URL")
	}
	// The namespace parameter is taken out of the raw query, the rest left as written:
	// store/redis reads its parameters (addr=host:port, master_name=) without decoding them,
	// and url.Values.Encode would turn the ':' of a seed address into %3A.
	var keep []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if kv != "" && !strings.HasPrefix(kv, "namespace=") && kv != "namespace" {
			keep = append(keep, kv)
		}
	}
	u.RawQuery = strings.Join(keep, "&")
	return storeurl.Location{Kind: Kind, URL: u.String(), Schema: ns}, nil
}

func open(ctx context.Context, loc storeurl.Location, o storeurl.Options) (store.Store, error) {
	opts := []redis.Option{redis.WithLogger(o.Logger)}
	if loc.Schema != "" {
		opts = append(opts, redis.WithNamespace(loc.Schema))
	}
	return redis.Open(ctx, loc.URL, opts...)
}
