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
//
// The TestRedis… tests prove the same of the Redis store: the exactly-once and SIGKILL runs on a
// namespace of their own on the shared Redis (ROTA_TEST_REDIS_URL, or 127.0.0.1:6379 that
// scripts/redis.sh provides; the same skip and CI rules), deleting only that namespace's keys;
// the restart and flush runs on a private redis-server that the test starts (with AOF on) and
// stops itself.
//
// TestChaos (chaos_*_test.go) combines the faults, on SQLite, PostgreSQL and Redis: a seeded
// schedule kills, pauses and restarts nodes, restarts the store (a private server), cuts its
// connections through a TCP proxy on loopback, fails Redis over to its replica and fills
// SQLite's disk, while the nodes run a mix of
// jobs; the invariants are checked once every job has ended. -chaos.duration sets its length
// (two minutes per store by default), -chaos.seed replays a schedule.
package e2e
