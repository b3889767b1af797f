-- 015: a resolution decides in one place what each dependent becomes and changes them in one
-- UPDATE, instead of two (the cancelled, the counted); and of two dependents it releases into
-- holding one unique key, only the first keeps the key.
--
-- The dependents are locked first, sorted by id (FOR NO KEY UPDATE), so that two resolutions
-- sharing dependents, whatever their plans, lock them in one order and cannot deadlock: the
-- order of an UPDATE's own locks follows its plan, and an unpinned Cancel against a pinned
-- Complete took them in two orders. What each becomes is decided in locked, from the row as
-- locked: cancelled when a dependency failed and it does not run anyway, pending while
-- dependencies are left, scheduled when its own run-at is still ahead, available otherwise. The
-- UPDATE looks the rows up by id, which finds a row another resolution changed while this one
-- waited for its lock (the row's new version is not in the statement's snapshot; the lookup
-- by id follows it there).
--
-- A job that did not hold its unique key while pending and would now gives it up if another
-- job holds it (as keepKeyIf in the Go code). The other job may be one released by the same
-- statement, which the check against the table cannot see (it reads the table as the
-- statement began): two such dependents with one key made the end of their dependency fail on
-- the unique index every time it was tried. Now only the first of them by id may keep it.

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
            SELECT j.id, j.unique_key, j.unique_states, w.n, w.why,
                CASE WHEN w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE THEN 'cancelled'
                    WHEN j.pending_deps > w.n THEN 'pending'
                    WHEN j.run_at > ended_at AND j.run_at > j.created_at THEN 'scheduled'
                    ELSE 'available' END AS to_state
            FROM {schema}.jobs j JOIN waited w ON w.job_id = j.id
            WHERE j.state = 'pending'
            ORDER BY j.id
            FOR NO KEY UPDATE OF j
        ),
        -- claiming: the dependent would come to hold its key, which it did not while pending.
        claiming AS (
            SELECT l.*, l.unique_key IS NOT NULL AND l.to_state <> 'pending'
                AND NOT 'pending' = ANY (l.unique_states) AND l.to_state = ANY (l.unique_states) AS claims
            FROM locked l
        ),
        decided AS MATERIALIZED (
            SELECT c.*, NOT c.claims OR (
                    row_number() OVER (PARTITION BY c.claims, c.unique_key ORDER BY c.id) = 1
                    AND NOT EXISTS (SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = c.unique_key
                        AND h.id <> c.id AND h.state = ANY (h.unique_states))) AS keeps_key
            FROM claiming c
        ),
        resolved AS (
            UPDATE {schema}.jobs j SET
                state = d.to_state,
                pending_deps = CASE WHEN d.to_state = 'cancelled' THEN j.pending_deps ELSE j.pending_deps - d.n END,
                run_at = CASE WHEN d.to_state IN ('available', 'scheduled') THEN greatest(j.run_at, ended_at)
                    ELSE j.run_at END,
                finalized_at = CASE WHEN d.to_state = 'cancelled' THEN ended_at ELSE j.finalized_at END,
                errors = CASE WHEN d.to_state = 'cancelled'
                    THEN j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'at', ended_at, 'error', d.why))
                    ELSE j.errors END,
                unique_states = CASE WHEN d.keeps_key THEN j.unique_states ELSE '{}' END
            FROM decided d
            WHERE j.id = d.id AND j.state = 'pending'
            RETURNING j.id, j.queue, j.state, j.has_dependents
        ),
        final_notified AS (
            SELECT count(pg_notify({final_channel}, ids || ';' || left(queue, 1000))) AS n FROM (
                SELECT queue, string_agg(id::text, ',') AS ids FROM (
                    SELECT id, queue, (row_number() OVER (PARTITION BY queue)) / 250 AS chunk
                    FROM resolved WHERE state = 'cancelled') f
                GROUP BY queue, chunk) c
        ),
        woken AS (
            SELECT count(pg_notify({insert_channel}, queue)) AS n
            FROM (SELECT DISTINCT queue FROM resolved WHERE state = 'available') q
        )
        SELECT coalesce((SELECT array_agg(id) FROM resolved WHERE state = 'cancelled' AND has_dependents), '{}')
        INTO frontier
        FROM final_notified, woken;
        frontier_states := array_fill('cancelled'::text, ARRAY[cardinality(frontier)]);
    END LOOP;
END
$$;
