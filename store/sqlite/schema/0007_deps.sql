-- Dependencies between jobs (workflows and batches). A job inserted to wait for others is
-- 'pending', with a row in job_waits counting the dependencies it still waits for when that is
-- more than one (a job that waits for one has none: see deps.go); job_deps holds
-- an edge from each of them to it until that dependency ends, when the store resolves the
-- dependent in the same transaction. has_dependents marks the jobs that have edges, so that
-- ending any other job costs no lookup.
ALTER TABLE jobs ADD COLUMN workflow TEXT;
ALTER TABLE jobs ADD COLUMN step TEXT;
-- depends_on is every dependency the job was given, a JSON array of ids, for readers; it is
-- written once, at insert (and when a batch grows), never by a dependency's end: a step that
-- waits for ten thousand others would otherwise rewrite their ids with every one that ends.
ALTER TABLE jobs ADD COLUMN depends_on TEXT;
ALTER TABLE jobs ADD COLUMN ignore_failed_deps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0;

CREATE TABLE job_deps (
	dep_id INTEGER NOT NULL,
	job_id INTEGER NOT NULL,
	PRIMARY KEY (dep_id, job_id)
) STRICT, WITHOUT ROWID;

-- What a pending job still waits for: a small row of its own, so that counting a dependency off
-- writes a few bytes, not the job's row.
CREATE TABLE job_waits (
	job_id        INTEGER PRIMARY KEY,
	pending       INTEGER NOT NULL,
	ignore_failed INTEGER NOT NULL
) STRICT;

-- A workflow's steps, and the workflows newest first.
CREATE INDEX jobs_workflow ON jobs (workflow, id) WHERE workflow IS NOT NULL;
