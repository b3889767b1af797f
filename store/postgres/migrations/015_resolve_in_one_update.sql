-- 015: a resolution changes its dependents in one UPDATE, which locks them in id order as it
-- goes, instead of locking them all first (FOR NO KEY UPDATE, in id order) and then updating
-- the cancelled and the counted ones in two UPDATEs.
--
-- The lock wrote every dependent's row once before the update wrote it again, and each of the
-- two UPDATEs looked every locked row up once more: a fan-out's root releasing 10,000 steps
-- spent 120-125 ms in the resolution, 100-106 ms now (psql, one warmed session, three
-- alternations). The order still holds two resolutions that share dependents from locking them
-- crosswise: the dependents come sorted by id out of waited, which is materialized, and the
-- UPDATE walks them in that order, looking each up by its key (a nested loop: waited is a CTE
-- the planner cannot see into, so it estimates it small). A dependent whose row changed before
-- the UPDATE reached it (cancelled meanwhile) is seen as it is then, and left alone unless it is
-- still pending.
--
-- new_state below, written out in each column that needs it, is what the dependent becomes:
-- cancelled when a dependency failed and it does not run anyway, pending while dependencies are
-- left, scheduled when its own run-at is still ahead, available otherwise. A job that did not
-- hold its unique key while pending and would now gives it up if another job holds it (as
-- keepKeyIf in the Go code).

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
        waited AS MATERIALIZED (
            SELECT ed.job_id, count(*) AS n,
                (array_agg(CASE WHEN e.dep_state IS NULL THEN 'dependency job ' || ed.dep || ' was deleted'
                        ELSE 'dependency job ' || ed.dep || ' ended ' || e.dep_state END ORDER BY ed.dep)
                    FILTER (WHERE e.dep_state IS DISTINCT FROM 'completed'))[1] AS why
            FROM edges ed JOIN unnest(frontier, frontier_states) AS e(dep, dep_state) ON e.dep = ed.dep
            GROUP BY ed.job_id
            ORDER BY ed.job_id
        ),
        resolved AS (
            UPDATE {schema}.jobs j SET
                state = CASE
                    WHEN w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE THEN 'cancelled'
                    WHEN j.pending_deps > w.n THEN 'pending'
                    WHEN j.run_at > ended_at AND j.run_at > j.created_at THEN 'scheduled'
                    ELSE 'available' END,
                pending_deps = CASE WHEN w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE
                    THEN j.pending_deps ELSE j.pending_deps - w.n END,
                run_at = CASE WHEN (w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE) OR j.pending_deps > w.n
                    THEN j.run_at ELSE greatest(j.run_at, ended_at) END,
                finalized_at = CASE WHEN w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE
                    THEN ended_at ELSE j.finalized_at END,
                errors = CASE WHEN w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE
                    THEN j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'at', ended_at, 'error', w.why))
                    ELSE j.errors END,
                unique_states = CASE WHEN j.unique_key IS NULL OR 'pending' = ANY (j.unique_states)
                        OR (w.why IS NULL OR j.ignore_failed_deps IS TRUE) AND j.pending_deps > w.n
                        OR (CASE
                            WHEN w.why IS NOT NULL AND j.ignore_failed_deps IS NOT TRUE THEN 'cancelled'
                            WHEN j.run_at > ended_at AND j.run_at > j.created_at THEN 'scheduled'
                            ELSE 'available' END) <> ALL (j.unique_states)
                        OR NOT EXISTS (SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = j.unique_key
                            AND h.id <> j.id AND h.state = ANY (h.unique_states))
                    THEN j.unique_states ELSE '{}' END
            FROM waited w
            WHERE j.id = w.job_id AND j.state = 'pending'
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
