package storetest

import (
	"testing"

	"github.com/rotahq/rota/store"
)

var metaTests = map[string]func(*testing.T, *env){
	"Identity":         testIdentity,
	"MigrateTwice":     testMigrateTwice,
	"StatesAreStrings": testStatesValid,
}

func testIdentity(t *testing.T, e *env) {
	a, err := e.s.Identity(e.ctx)
	if err != nil {
		t.Fatalf("Identity: %v", err)
	}
	if a == "" {
		t.Fatal("empty identity")
	}
	e.insertOne(job("k"))
	if b, err := e.s.Identity(e.ctx); err != nil || b != a {
		t.Fatalf("Identity changed from %q to %q (%v)", a, b, err)
	}
}

// Migrate is idempotent: running it again on a migrated store keeps the jobs and the identity.
func testMigrateTwice(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	id, _ := e.s.Identity(e.ctx)
	for range 2 {
		if err := e.s.Migrate(e.ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	sameJob(t, e.get(j.ID), j)
	if again, _ := e.s.Identity(e.ctx); again != id {
		t.Fatalf("Migrate changed the identity from %q to %q", id, again)
	}
}

// Every state a store returns is one of the known states.
func testStatesValid(t *testing.T, e *env) {
	e.insert(job("k"), job("k"))
	e.claimOne()
	for _, j := range e.listAll(store.ListParams{}) {
		if !j.State.Valid() {
			t.Errorf("job %d has unknown state %q", j.ID, j.State)
		}
	}
}
