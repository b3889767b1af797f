// Package sqlite is rota's embedded store, the default: one SQLite file, nothing to install, on
// the pure-Go driver modernc.org/sqlite. Several processes on one host may share the file.
//
// # Writes: one writer, group commit
//
// SQLite admits one writer at a time, and every commit has a fixed cost (a WAL write, and an
// fsync with synchronous=FULL). So every write of a Store (insert, claim, complete, heartbeat,
// rescue, admin) goes to one goroutine that owns the only write connection. It takes every
// request waiting at that moment, runs them in one transaction and commits once: N concurrent
// callers share one commit, and no goroutine of the process ever waits on SQLITE_BUSY for
// another. A request that fails is undone alone (the group is run again with a savepoint per
// request), and a caller hears back only after the commit: a nil error means the write is as
// durable as the synchronous setting makes it. Reads (Get, List, QueueStats, Identity) use a
// separate pool and never wait for the writer: in WAL mode they read the last commit.
//
// Inside a transaction the hot paths are few statements, prepared once: inserts are multi-row
// INSERTs of up to 100 jobs (concurrent single-job inserts of one group become one statement), a
// claim is one UPDATE that promotes the queue's due scheduled and retryable jobs and one UPDATE …
// RETURNING that takes available ones, and a batch of outcomes is one UPDATE … FROM VALUES.
// Partial indexes keep each path to the rows it can touch: available jobs in claim order, waiting
// jobs by time, running jobs by lease, finished jobs by age. The number of jobs per queue and
// state is kept in the same transactions, so QueueStats reads a few rows, not the table. Times are
// integer microseconds; JSON documents are text.
//
// # Durability: synchronous=NORMAL by default
//
// With SynchronousNormal (the default) a commit is written to the WAL file and synced at the
// next checkpoint: a job whose Insert returned survives any crash of the process (SIGKILL, OOM,
// panic), but a power loss or kernel crash may lose the last commits before it; the file itself
// stays consistent. SynchronousFull (WithSynchronous) also syncs the WAL at every commit, so that
// a returned Insert survives a power cut. NORMAL is the default because it meets rota's
// throughput targets on a 2-core machine with room to spare, where FULL meets them only while the
// disk is idle: a producer that waits for each insert waits for one disk sync (see
// SynchronousDefault for the figures, and bench_test.go to measure yours).
//
// # Several processes
//
// Each process has its own writer. The write transaction starts with BEGIN IMMEDIATE, so it takes
// the file's write lock before it reads anything and can never deadlock on upgrading a lock; a
// writer that finds the lock taken polls for it every few hundred microseconds, at random, for
// up to the busy timeout (SQLite's own busy handler backs off to 100 ms, too coarse to find the
// gaps between a busy neighbour's commits). Claims are atomic across processes: the claim's
// UPDATE runs under the lock. Notifications of inserts and final jobs reach the subscribers of the
// same Store; other processes' commits reach them as TopicChanged, within WatchIntervalDefault
// (see watcher): SQLite tells that the file changed, not what changed.
//
// # Callers' transactions
//
// DB returns the pool behind reads; its transactions also begin IMMEDIATE. InsertTx inserts jobs
// in such a transaction, so that they exist if and only if it commits. While it is open it holds
// the write lock and every other write of every process waits, so keep it short. It waits for the
// lock with SQLite's busy handler, which under a sustained stream of the store's own commits may
// find no gap before the busy timeout: retry then.
//
// # Limits
//
// Claims enforce store.Limit in the writer's transaction, which holds the file's write lock for
// every process: the running jobs and starts a limit counts cannot change between the count and
// the claim. The claim's first statement, the paused check, also asks whether a limit is set on
// the queue or on any kind; only then does the claim read its limits and their counts (running
// jobs of a queue from queue_counts, of a kind from jobs_running) and claim in capped rounds, so
// a store without limits claims as it did before they existed. Starts under rate limits go to
// limit_starts, one row per claim and limit, deleted as they leave the window.
//
// # Leases and nodes
//
// The store also implements store.Leaser (the leader, singleton workers) and store.NodeRegistry.
// Lease expiry is judged by the store's clock, the host's: every process on the file shares it.
//
// The store never holds a transaction open across a job's run, and it decides no policy: it
// applies the transitions it is asked for, judged by its clock (WithClock).
package sqlite
