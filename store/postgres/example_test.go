package postgres_test

import (
	"context"
	"log"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
)

// Open a store, migrate its schema, and enqueue a job in the same transaction as a business
// write: the job exists if and only if the transaction commits.
func Example() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, "postgres://app@db.internal:5432/app", postgres.WithSchema("rota"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil { // or: rota migrate
		log.Fatal(err)
	}

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE accounts SET welcomed = true WHERE id = $1`, 42); err != nil {
		log.Fatal(err)
	}
	_, err = s.InsertTx(ctx, tx, []store.InsertParams{{
		Kind: "welcome_email", Queue: "mail", Args: []byte(`{"account":42}`), MaxAttempts: 5,
	}})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}
