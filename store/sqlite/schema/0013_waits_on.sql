-- A pending job that waits for one job alone names it in waits_on rather than in an edge of
-- job_deps: that job's end finds it by this index and releases it with one update, where an
-- edge cost an insert, a delete and an update by id (a fan-out's steps each wait for its root
-- alone). A job that waits for more than one keeps edges and a count, as before; a second wait
-- given to a job that waited for one (DependencyOf) turns its waits_on into an edge. The index
-- names no state, so that the claims and completions of other jobs, which change their state,
-- never touch it: a job's release or cancellation by its dependency clears its waits_on, and
-- the readers look at pending jobs only. The version moves so that earlier builds, which would
-- never release such a job, refuse the file.
ALTER TABLE jobs ADD COLUMN waits_on INTEGER;
CREATE INDEX jobs_waits_on ON jobs (waits_on) WHERE waits_on IS NOT NULL;
