package storeurl

import (
	"context"
	"log/slog"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
)

// openPostgres opens a PostgreSQL store without migrating it: changing a shared database's schema
// is for `rota migrate` to do, once, not for every node that starts.
func openPostgres(ctx context.Context, url, schema string, logger *slog.Logger) (store.Store, error) {
	opts := []postgres.Option{postgres.WithLogger(logger)}
	if schema != "" {
		opts = append(opts, postgres.WithSchema(schema))
	}
	return postgres.Open(ctx, url, opts...)
}
