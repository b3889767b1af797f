package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// writeCheckLease is the lease serve takes and gives back at start to prove the store takes
// writes. Opening a store only reads it (an up-to-date SQLite file takes no write lock), so a
// read-only file, a full disk or a standby server would otherwise start a node that fails every
// claim and insert.
const writeCheckLease = "rota.write-check"

// checkWritable writes to st once, through the lease primitive every fleet store has, and says
// why when it cannot.
func checkWritable(ctx context.Context, st store.Store, owner, name string) error {
	leaser, ok := st.(store.Leaser)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _, err := leaser.AcquireLease(ctx, writeCheckLease, owner, time.Second)
	if err == nil {
		err = leaser.ReleaseLease(ctx, writeCheckLease, owner)
	}
	if err != nil {
		return fmt.Errorf("store %s cannot be written, so this node could neither run nor take jobs: %w", name, err)
	}
	return nil
}
