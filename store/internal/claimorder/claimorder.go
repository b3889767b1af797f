// Package claimorder is the order in which a claim takes jobs, as store.Store.Claim defines it:
// highest priority first, then oldest RunAt, then lowest id. A store walks an index in this
// order to pick jobs, and sorts what it claimed back into it, since an UPDATE … RETURNING hands
// rows back in no set order.
package claimorder

import (
	"cmp"
	"slices"

	"github.com/rotahq/rota/store"
)

// SQL is the order as an ORDER BY list over the jobs table's priority, run_at and id columns.
// Every SQL store's claim index is built on these columns in this order.
const SQL = "priority DESC, run_at, id"

// Compare orders a before b when a claim takes a first.
func Compare(a, b *store.JobRow) int {
	return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
}

// Sort puts jobs in claim order.
func Sort(jobs []*store.JobRow) { slices.SortFunc(jobs, Compare) }
