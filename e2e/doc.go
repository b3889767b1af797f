// Package e2e tests rota as its users run it: real `rota serve` processes on a real PostgreSQL,
// stopped with real signals. The unit and conformance tests prove each part in one process, often
// in virtual time; only separate processes can show what a fleet promises: exactly-once runs when
// nothing fails, no job lost when a node is killed or paused or the database restarts, and one
// leader at a time.
//
// The package holds tests only. It needs PostgreSQL (ROTA_TEST_POSTGRES_URL, or the local server
// scripts/postgres.sh provides): without one the tests skip, except under CI=true, where they
// fail. The store-outage test starts a throwaway server of its own with scripts/postgres.sh, so
// restarting it cannot disturb the tests of other packages that share the main one.
package e2e
