package e2e

import "testing"

// TestSIGKILLMidRun on Redis: the leader, SIGKILLed a third of the way through sigkillJobs, loses
// nothing. Once the server has dropped its connections (CLIENT LIST by client name), the jobs the
// store shows running on it are exactly those rescued from it: a lost lease at attempt 1,
// completed at attempt 2 by a live node. Only those may have run twice, and nothing the dead
// node wrote late overrode the rescue (their fence moved on).
func TestRedisSIGKILLMidRun(t *testing.T) {
	sigkillMidRun(t, newRedisCluster(t, sharedRedis(t)))
}
