-- Jobs. Times are integer microseconds since the Unix epoch (PostgreSQL's precision, and an
-- integer compares and indexes faster than text); JSON documents are text so that the sqlite3
-- shell shows them and json_* functions can edit them in place.
CREATE TABLE jobs (
	-- AUTOINCREMENT: an id is never reused after a delete or prune, so an id a caller holds
	-- (Wait, a dashboard link) can never point at another job.
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	kind             TEXT    NOT NULL,
	queue            TEXT    NOT NULL,
	args             TEXT    NOT NULL,
	priority         INTEGER NOT NULL,
	state            TEXT    NOT NULL,
	attempt          INTEGER NOT NULL DEFAULT 0,
	max_attempts     INTEGER NOT NULL,
	run_at           INTEGER NOT NULL,
	expires_at       INTEGER,
	unique_key       TEXT,
	tags             TEXT,
	metadata         TEXT,
	errors           TEXT,
	result           TEXT,
	created_at       INTEGER NOT NULL,
	attempted_at     INTEGER,
	finalized_at     INTEGER,
	owner            TEXT,
	lease_until      INTEGER,
	fence            INTEGER NOT NULL DEFAULT 0,
	cancel_requested INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Claims walk this index in claim order and stop after Max rows. It holds available jobs only,
-- so finished jobs cost nothing here, and neither do jobs waiting for a future time: however many
-- retries or delayed jobs wait, a claim reads only what it can take.
CREATE INDEX jobs_claim ON jobs (queue, priority DESC, run_at, id) WHERE state = 'available';

-- Jobs waiting for their time, by time. A claim first moves those that are due to available,
-- reading only due rows: the range ends at the first one still in the future.
CREATE INDEX jobs_due ON jobs (queue, state, run_at) WHERE state IN ('scheduled', 'retryable');

-- Running jobs only: bounded by the fleet's concurrency, whatever the table's size. Rescue reads
-- it by expired lease; Heartbeat walks it and matches owner from the index itself.
CREATE INDEX jobs_running ON jobs (lease_until, owner) WHERE state = 'running';

CREATE INDEX jobs_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL;

-- Finished jobs by age, for Prune.
CREATE INDEX jobs_finalized ON jobs (finalized_at) WHERE finalized_at IS NOT NULL;

-- Paused queues. A queue has a row here only while it is paused.
CREATE TABLE paused_queues (
	name TEXT PRIMARY KEY
) STRICT, WITHOUT ROWID;
