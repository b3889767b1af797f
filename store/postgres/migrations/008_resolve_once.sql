-- 008: a job's end is resolved by deleting its edges alone, and the other ends of the same
-- statement find that out with one lookup.
--
-- 007 marked an end resolved by clearing the job's has_dependents flag: one more row version
-- for every step something waited for, on top of its claim and its completion, which made a
-- fan-in of 10,000 steps drain at a third of the speed of 10,000 plain jobs. And every row
-- trigger call of a statement looked for unresolved ends through jobs_unresolved, whose entries
-- for the rows just resolved stay until a vacuum: a statement that ended n jobs with
-- dependents cost n² heap visits. Now a job's end is resolved when its edges are gone (the
-- flag stays, and says only that the job has had dependents): a trigger call whose own job has
-- no edges left returns after one lookup of job_deps, and the first call of a statement finds
-- the statement's other ends among the jobs finalized at the same time (one time for the whole
-- statement, the store's), through jobs_finalized.

DROP INDEX {schema}.jobs_unresolved;

CREATE OR REPLACE FUNCTION {schema}.resolve_dependents(ended_ids bigint[], ended_states text[], ended_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := ended_ids;
    frontier_states text[] := ended_states;
BEGIN
    WHILE cardinality(frontier) > 0 LOOP
        WITH edges AS (
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

-- jobs_ended resolves the ends of the statement that have edges left, together, in its first
-- call; the other calls find their own job's edges gone. See 007 for why together.
CREATE OR REPLACE FUNCTION {schema}.jobs_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    states text[];
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {schema}.job_deps WHERE dep_id = NEW.id) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(j.id ORDER BY j.id), array_agg(j.state ORDER BY j.id) INTO ids, states
    FROM {schema}.jobs j
    WHERE j.finalized_at = NEW.finalized_at AND j.has_dependents
        AND j.state IN ('completed', 'cancelled', 'discarded', 'expired')
        AND EXISTS (SELECT 1 FROM {schema}.job_deps d WHERE d.dep_id = j.id);
    PERFORM {schema}.resolve_dependents(ids, states, NEW.finalized_at);
    RETURN NULL;
END
$$;
