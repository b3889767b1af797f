package e2e

import "testing"

// redisPersistenceWarning starts what a node warns at start when the Redis server does not
// persist every write (the shared test server runs without persistence): about the server the
// store found, not a failure of the run.
const redisPersistenceWarning = "rota: Redis persist"

// TestExactlyOnceThreeNodes on Redis: three nodes on one namespace of the shared server run
// every one of exactlyOnceJobs exec jobs exactly once (a claim is one Lua script, so two nodes
// never take the same job), all three get work, every job completes at its first attempt, and no
// node logs a warning or error beyond the server's persistence warning.
func TestRedisExactlyOnceThreeNodes(t *testing.T) {
	exactlyOnceThreeNodes(t, newRedisCluster(t, sharedRedis(t)), redisPersistenceWarning)
}
