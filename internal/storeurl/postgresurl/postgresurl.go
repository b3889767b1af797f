// Package postgresurl registers the PostgreSQL store with package storeurl, under the schemes
// postgres and postgresql. Import it for its effect. A URL may name the schema rota's tables
// live in with ?schema=NAME (default "rota"), which is rota's parameter, not the server's: it is
// taken out of the URL before the store connects. Opening a location does not migrate the
// schema: changing a shared database's schema is for `rota migrate` to do, once, not for every
// node that starts.
package postgresurl

import (
	"context"
	"errors"
	"net/url"

	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
)

func init() {
	b := storeurl.Backend{Kind: storeurl.Postgres, Usage: "postgres://…", Parse: parse, Open: open}
	storeurl.Register("postgres", b)
	storeurl.Register("postgresql", b)
}

// parse takes rota's own schema parameter out of a PostgreSQL URL: the server would refuse it as
// an unknown setting.
func parse(raw string) (storeurl.Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// The error would repeat the URL, password and all.
		return storeurl.Location{}, errors.New("store URL: not a valid postgres:// URL")
	}
	q := u.Query()
	schema := q.Get("schema")
	if q.Has("schema") {
		if schema == "" {
			return storeurl.Location{}, errors.New("store URL: ?schema= names no schema")
		}
		q.Del("schema")
		u.RawQuery = q.Encode()
	}
	return storeurl.Location{Kind: storeurl.Postgres, URL: u.String(), Schema: schema}, nil
}

func open(ctx context.Context, loc storeurl.Location, o storeurl.Options) (store.Store, error) {
	opts := []postgres.Option{postgres.WithLogger(o.Logger)}
	if loc.Schema != "" {
		opts = append(opts, postgres.WithSchema(loc.Schema))
	}
	return postgres.Open(ctx, loc.URL, opts...)
}
