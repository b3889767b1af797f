// Package storetest is the conformance suite every rota store passes, so that behaviour is the same
// whichever store a deployment picks. A store's own tests call Run once:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
//			s, err := mystore.Open(t.Context(), dsn(t), mystore.WithClock(clk))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite runs in virtual time: open must return a fresh, migrated, empty store that reads "now"
// from clk, so that lease expiry, delayed jobs and rescue are tested by advancing a fake clock and
// never by sleeping. Every subtest opens its own store. Times are compared at microsecond
// precision, the finest PostgreSQL keeps, and JSON by value, not by bytes (jsonb reorders keys).
//
// The suite tests only what the contract in package store promises, the optional interfaces
// (Notifier, Leaser, NodeRegistry) included where the store implements them. What is particular
// to one store (the stability of Identity across reopening, TxInserter, several processes on one
// store) belongs to that store's own tests; LimitRace serves those that race claimers through
// several handles on one store.
package storetest

import (
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// Opener returns a fresh, migrated, empty store whose notion of now comes from clk.
type Opener = func(t *testing.T, clk clockwork.Clock) store.Store

// Run runs the whole suite against the stores open returns.
func Run(t *testing.T, open func(t *testing.T, clk clockwork.Clock) store.Store) {
	groups := []struct {
		name  string
		tests map[string]func(*testing.T, *env)
	}{
		{"Insert", insertTests},
		{"Claim", claimTests},
		{"Complete", completeTests},
		{"Rescue", rescueTests},
		{"Attempts", attemptTests},
		{"Admin", adminTests},
		{"Queue", queueTests},
		{"Unique", uniqueTests},
		{"Notify", notifyTests},
		{"Meta", metaTests},
		{"Leaser", leaserTests},
		{"Limit", limitTests},
		{"Schedule", scheduleTests},
		{"Deps", depTests},
		{"ListFilter", listFilterTests},
		{"Stats", statsTests},
		{"KeyMoves", keyMoveTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, name := range sortedKeys(g.tests) {
				t.Run(name, func(t *testing.T) {
					g.tests[name](t, newEnv(t, open))
				})
			}
		})
	}
}
