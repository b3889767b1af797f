// Package redis is rota's Redis store: many nodes share one Redis (7.0 or newer), standalone,
// Sentinel or Cluster, through one code path (redis.UniversalClient).
//
// # Keys
//
// Every key of a namespace is rota:{ns}:…, so the namespace is one Cluster hash slot and every
// transition is one Lua script that reads and checks first and writes last (Redis does not roll
// a script back); the scripts are the functions of one function library (scripts.go). Jobs are hashes; indexes keep what claims, lists and counts need: a ready
// sorted set per (queue, kind) scored by priority and ordered by run_at and id, so a node claims
// only the kinds it runs without stepping over others; a waiting set per queue for scheduled
// and retryable jobs, promoted by claims; an expiry set per queue; the running set by lease; and
// an id-ordered set per (state, queue), whose sizes are QueueStats' counts and whose merge is
// List; and per queue the kinds it has had ready jobs of, at whose ready sets' heads QueueStats
// finds its oldest available job. A pending job is in its (state, queue) set only; each job it waits for holds it as an
// edge (its field dp, or a set of dependents), settled by whichever script ends that job, at
// most WithSettleBatch of them
// per script, the rest parked in the settling hash for the settle script (deps.go, settle.go).
// Workflows keep their ids, their steps and their counts by state in keys of their own
// (workflows.go). The fleet's
// per-minute counts (store.StatsKeeper) are one hash per minute, min:<minute>, with a field
// per node, queue and kind, indexed by the zset min (stats.go). No key
// carries a TTL: a fake clock could not drive it, and it would delete state silently. Several
// namespaces may share one Redis.
//
// # Time
//
// Redis' TIME, read inside each script, decides ownership; WithClock sends a clockwork.Clock's
// time instead, for tests in virtual time. Fences and lease tokens are max(previous+1, now in
// µs), so a Redis that lost its last writes still hands out larger ones.
//
// # Durability
//
// A returned Insert is as durable as the server's persistence makes a write: appendonly with
// appendfsync always survives power loss, everysec a crash of the process; without persistence,
// nothing survives a restart. Run Redis with maxmemory-policy noeviction (or volatile-*): rota
// sets no TTLs, and an allkeys policy would evict jobs. Open reads these settings (CONFIG GET,
// best effort: where CONFIG is renamed or denied it logs that it could not check), warns about
// persistence that loses jobs on a restart, and refuses an allkeys-* policy (ErrEvictionPolicy)
// unless WithAllowEviction.
//
// Replication is asynchronous: a failover may lose writes the primary acknowledged.
// WithWaitReplicas (wait_replicas=N&wait_timeout=D in the URL) follows every state-changing
// script with WAIT on its connection; fewer acknowledgements than asked fail the call with
// ErrNotReplicated and store.ErrUnavailable, although the write stays applied on the primary.
//
// # Migrating and identity
//
// Migrate writes the namespace's meta key (version, random identity). Every script checks it
// first: a namespace that was flushed, or never migrated, is refused with ErrNotMigrated rather
// than quietly rebuilt with ids from 1, and one written by a newer build with
// store.ErrSchemaTooNew. Migrating a flushed namespace again gives it a new Identity.
//
// # Notifications
//
// Scripts PUBLISH on rota:{ns}:ev after their writes; each Store holds one subscriber
// connection, opened by the first Subscribe, and after a reconnect tells subscribers to look
// again (TopicInsert for every queue and TopicChanged).
package redis
