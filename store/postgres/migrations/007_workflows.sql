-- 007: dependencies between jobs (store.InsertParams.DependsOn) and the workflows they form.
--
-- A job inserted with dependencies that have not all ended as it needs is pending. pending_deps
-- counts those it still waits for, and job_deps holds an edge from each of them to it. Whatever
-- ends a job resolves its dependents in the same transaction, through the trigger below.
-- has_dependents marks the jobs that edges lead from, until their end is resolved: it keeps the
-- trigger off every job nothing waits for, which is nearly all.

-- pending joins the states. Every existing row passed the stricter check it replaces, so the new
-- one is added NOT VALID: validating it would read the whole table under the exclusive lock that
-- the migration's transaction holds until it commits. New and updated rows are checked alike.
ALTER TABLE {schema}.jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE {schema}.jobs ADD CONSTRAINT jobs_state_check CHECK (state IN (
    'scheduled', 'pending', 'available', 'running', 'retryable',
    'completed', 'cancelled', 'discarded', 'expired')) NOT VALID;

-- Nullable columns without defaults: adding them rewrites nothing, and they are NULL (false,
-- none) in every job outside workflows, which costs those rows no byte. depends_on is what the
-- job was given, in its order, for people to read; job_deps is what it still waits for.
ALTER TABLE {schema}.jobs
    ADD COLUMN workflow text,
    ADD COLUMN step text,
    ADD COLUMN depends_on bigint[],
    ADD COLUMN ignore_failed_deps boolean,
    ADD COLUMN pending_deps integer,
    ADD COLUMN has_dependents boolean;

-- An edge from a dependency that has not ended to a job that waited for it when it was made. An
-- edge outlives the wait when the dependent stops waiting another way (cancelled, retried,
-- deleted): it then matches no pending job, and goes when its dependency ends.
CREATE TABLE {schema}.job_deps (
    dep_id bigint NOT NULL,
    job_id bigint NOT NULL,
    PRIMARY KEY (dep_id, job_id)
);

-- A workflow's steps, in id order, and the workflows in byte order of their ids (COLLATE "C",
-- whatever the database's collation), newest first. Jobs outside workflows are not in it.
CREATE INDEX jobs_workflow ON {schema}.jobs (workflow COLLATE "C", id) WHERE workflow IS NOT NULL;

-- The jobs that have ended and whose dependents are not resolved yet: only those the statement
-- running now ended, as a resolution clears the flag in the transaction that ends the job. The
-- index is empty between statements.
CREATE INDEX jobs_unresolved ON {schema}.jobs (id)
    WHERE has_dependents AND state IN ('completed', 'cancelled', 'discarded', 'expired');

-- resolve_dependents resolves the pending dependents of the jobs ended_ids, which have just
-- ended in ended_states (NULL: deleted before it ended), at the store's time ended_at. A
-- dependent that no longer waits for a completed one (or for any that ended, when it ignores
-- failed dependencies) counts it off, and once it waits for none becomes available, or
-- scheduled while its run_at is ahead; any other end cancels it, naming the dependency in its
-- errors as store.DependencyError and store.DependencyDeletedError word it. The cancelled ones
-- that have dependents are the next round's ended jobs: a chain of any length is a loop, never
-- a recursion.
--
-- A run_at is ahead only for a job inserted to run later than its insert. On the server's
-- clock a transaction's now() is when it began, and a dependent inserted while its
-- dependency's completion waited for the insert's lock was created after that now().
--
-- The dependents of all the ended jobs are locked together, in id order, before they change,
-- so two transactions resolving dependents they share take their locks in one order. The count
-- is changed by an UPDATE of the dependent's row, which concurrent resolutions take turns on,
-- each re-reading the count the one before it left; that is what makes two last dependencies
-- ending at once release it once.
CREATE FUNCTION {schema}.resolve_dependents(ended_ids bigint[], ended_states text[], ended_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := ended_ids;
    frontier_states text[] := ended_states;
BEGIN
    WHILE cardinality(frontier) > 0 LOOP
        WITH resolved AS (
            UPDATE {schema}.jobs SET has_dependents = false
            WHERE id = ANY (frontier) AND has_dependents
        ),
        edges AS (
            DELETE FROM {schema}.job_deps d
            USING unnest(frontier, frontier_states) AS e(dep, dep_state)
            WHERE d.dep_id = e.dep
            RETURNING d.job_id, e.dep, e.dep_state
        ),
        waited AS (
            SELECT job_id, count(*) AS n,
                (array_agg(CASE WHEN dep_state IS NULL THEN 'dependency job ' || dep || ' was deleted'
                        ELSE 'dependency job ' || dep || ' ended ' || dep_state END ORDER BY dep)
                    FILTER (WHERE dep_state IS DISTINCT FROM 'completed'))[1] AS why
            FROM edges GROUP BY job_id
        ),
        locked AS MATERIALIZED (
            SELECT j.id, w.n, w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE AS fails, w.why,
                j.run_at > ended_at AND j.run_at > j.created_at AS ahead
            FROM {schema}.jobs j JOIN waited w ON w.job_id = j.id
            WHERE j.state = 'pending'
            ORDER BY j.id
            FOR NO KEY UPDATE OF j
        ),
        cancelled AS (
            UPDATE {schema}.jobs j SET state = 'cancelled', finalized_at = ended_at,
                errors = j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'at', ended_at, 'error', l.why)),
                -- A job that did not hold its key while pending and would now gives it up if
                -- another job holds it (as keepKeyIf in the Go code).
                unique_states = CASE WHEN j.unique_key IS NULL OR 'cancelled' <> ALL (j.unique_states)
                        OR 'pending' = ANY (j.unique_states)
                        OR NOT EXISTS (SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = j.unique_key
                            AND h.id <> j.id AND h.state = ANY (h.unique_states))
                    THEN j.unique_states ELSE '{}' END
            FROM locked l
            WHERE j.id = l.id AND l.fails AND j.state = 'pending'
            RETURNING j.id, j.queue, j.has_dependents
        ),
        counted AS (
            UPDATE {schema}.jobs j SET
                pending_deps = j.pending_deps - l.n,
                state = CASE WHEN j.pending_deps > l.n THEN 'pending'
                    WHEN l.ahead THEN 'scheduled' ELSE 'available' END,
                run_at = CASE WHEN j.pending_deps > l.n THEN j.run_at ELSE greatest(j.run_at, ended_at) END,
                unique_states = CASE WHEN j.pending_deps > l.n OR j.unique_key IS NULL
                        OR 'pending' = ANY (j.unique_states)
                        OR (CASE WHEN l.ahead THEN 'scheduled' ELSE 'available' END) <> ALL (j.unique_states)
                        OR NOT EXISTS (SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = j.unique_key
                            AND h.id <> j.id AND h.state = ANY (h.unique_states))
                    THEN j.unique_states ELSE '{}' END
            FROM locked l
            WHERE j.id = l.id AND NOT l.fails AND j.state = 'pending'
            RETURNING j.id, j.queue, j.state
        ),
        final_notified AS (
            SELECT count(pg_notify({final_channel}, ids || ';' || left(queue, 1000))) AS n FROM (
                SELECT queue, string_agg(id::text, ',') AS ids FROM (
                    SELECT id, queue, (row_number() OVER (PARTITION BY queue)) / 250 AS chunk FROM cancelled) f
                GROUP BY queue, chunk) c
        ),
        woken AS (
            SELECT count(pg_notify({insert_channel}, queue)) AS n
            FROM (SELECT DISTINCT queue FROM counted WHERE state = 'available') q
        )
        SELECT coalesce((SELECT array_agg(id) FROM cancelled WHERE has_dependents), '{}')
        INTO frontier
        FROM final_notified, woken;
        frontier_states := array_fill('cancelled'::text, ARRAY[cardinality(frontier)]);
    END LOOP;
END
$$;

-- jobs_ended resolves the dependents of every job the statement ended, at once, in its first
-- call (the row triggers of a statement run after it, one after another); the later calls find
-- nothing left. One resolution for all keeps two statements that end jobs with dependents in
-- common, crosswise, from locking those in two orders. The time is the row's finalized_at:
-- every path that ends a job stamps it with the store's time (the server's, or a test's clock),
-- one for the whole statement. The jobs the resolution cancels fire the trigger again, one
-- level down; the loop of the resolution resolves those, so the nested call does nothing.
CREATE FUNCTION {schema}.jobs_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    states text[];
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(id ORDER BY id), array_agg(state ORDER BY id) INTO ids, states
    FROM {schema}.jobs
    WHERE has_dependents AND state IN ('completed', 'cancelled', 'discarded', 'expired');
    IF ids IS NOT NULL THEN
        PERFORM {schema}.resolve_dependents(ids, states, coalesce(NEW.finalized_at, now()));
    END IF;
    RETURN NULL;
END
$$;

-- The WHEN clause is evaluated for every update of state and costs a few comparisons; only the
-- ends of jobs that have dependents call the function.
CREATE TRIGGER jobs_ended AFTER UPDATE OF state ON {schema}.jobs FOR EACH ROW
    WHEN (NEW.has_dependents
        AND NEW.state IN ('completed', 'cancelled', 'discarded', 'expired')
        AND OLD.state NOT IN ('completed', 'cancelled', 'discarded', 'expired'))
    EXECUTE FUNCTION {schema}.jobs_ended();

-- jobs_deleted resolves the dependents of a job deleted before it ended. A deleted row carries
-- no time of the store's, so the deleting transaction passes it in the setting rota.now (Delete
-- does); without it, the server's now() is the store's time.
CREATE FUNCTION {schema}.jobs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM {schema}.resolve_dependents(ARRAY[OLD.id], ARRAY[NULL::text],
        coalesce(nullif(current_setting('rota.now', true), '')::timestamptz, now()));
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_deleted AFTER DELETE ON {schema}.jobs FOR EACH ROW
    WHEN (OLD.has_dependents AND OLD.state NOT IN ('completed', 'cancelled', 'discarded', 'expired'))
    EXECUTE FUNCTION {schema}.jobs_deleted();
