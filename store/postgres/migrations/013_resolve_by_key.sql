-- 013: a resolution finds the edges of the jobs that ended through job_deps' key. It deleted
-- them through a join with the unnested ids, which the planner, given the ids at hand (as
-- plpgsql plans a statement's first runs), could make a hash join over a scan of all of
-- job_deps: each batch of completions of a fan-in's steps then read every edge still waiting,
-- 1.5-1.8 ms per 100 completions with 10,000 edges left, against 0.9-1.0 ms through the key
-- (psql, one warmed session). The ended jobs' states join the deleted edges afterwards; the ids
-- of one call are distinct.

CREATE OR REPLACE FUNCTION {schema}.resolve_dependents(ended_ids bigint[], ended_states text[], ended_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := ended_ids;
    frontier_states text[] := ended_states;
BEGIN
    WHILE cardinality(frontier) > 0 LOOP
        WITH edges AS (
            DELETE FROM {schema}.job_deps d WHERE d.dep_id = ANY (frontier)
            RETURNING d.job_id, d.dep_id AS dep
        ),
        waited AS (
            SELECT ed.job_id, count(*) AS n,
                (array_agg(CASE WHEN e.dep_state IS NULL THEN 'dependency job ' || ed.dep || ' was deleted'
                        ELSE 'dependency job ' || ed.dep || ' ended ' || e.dep_state END ORDER BY ed.dep)
                    FILTER (WHERE e.dep_state IS DISTINCT FROM 'completed'))[1] AS why
            FROM edges ed JOIN unnest(frontier, frontier_states) AS e(dep, dep_state) ON e.dep = ed.dep
            GROUP BY ed.job_id
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
