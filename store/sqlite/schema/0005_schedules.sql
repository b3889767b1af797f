-- Cron schedules (store.Schedule). Stores keep the expression and zone as text and never
-- interpret them: package cron does, on the leader. last_planned is NULL until the planner first
-- plans the schedule; PlanSchedule compares it with IS, so NULL matches the zero time.
CREATE TABLE schedules (
	name         TEXT    PRIMARY KEY,
	expr         TEXT    NOT NULL,
	zone         TEXT    NOT NULL,
	kind         TEXT    NOT NULL,
	queue        TEXT    NOT NULL,
	args         TEXT    NOT NULL,
	priority     INTEGER NOT NULL,
	max_attempts INTEGER NOT NULL,
	tags         TEXT,
	missed       TEXT    NOT NULL,
	paused       INTEGER NOT NULL DEFAULT 0,
	last_planned INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The schedule that planned a job, NULL for every other job. Adding a column without a default
-- rewrites nothing, however many jobs the file holds.
ALTER TABLE jobs ADD COLUMN schedule TEXT;

-- A schedule's occurrences that have not started, which editing or removing it cancels. Only
-- planned jobs that still wait are in it, so other jobs pay nothing for it.
CREATE INDEX jobs_schedule ON jobs (schedule) WHERE state = 'scheduled' AND schedule IS NOT NULL;
