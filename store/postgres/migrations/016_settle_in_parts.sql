-- 016: a completion resolves at most a bounded number of its ends' edges in its own transaction
-- and parks the rest in job_settling, which the Store settles in further transactions, each as
-- bounded, before Complete returns.
--
-- A fan-out's root released all its dependents in the transaction that completed it: ten
-- thousand steps took 150-200 ms, during which none of them could be claimed, and the
-- completion held the row locks of all of them. Now the first thousand are claimable when the
-- completion commits and the rest follow a thousand at a time, while the first ones run.
--
-- The bound is the transaction's setting rota.settle_budget: how many edges it may still
-- resolve (absent: no bound, as before, for every statement but Complete's and the settling's
-- own). A resolution that uses it up records the ends whose edges are left, with the state
-- they ended in, and sets rota.parked. Edges are deleted as they are counted, so however the
-- settling is split, a dependent counts each dependency off once. An end that is parked is
-- settled as it ended, at the time it is settled: a delete of the job afterwards does not
-- change it (its edges stay, the delete trigger fires only for jobs that have not ended). A job
-- made to run again (Retry, RetryWorkflow) loses its parked entry, and keeps has_dependents
-- while edges are left: they wait for its next end, which resolves them.
--
-- Complete also resolves its ends itself, in one statement after its UPDATE, and tells the row
-- trigger so through the setting rota.resolving: the trigger called a plpgsql function for
-- every step a batch completed (the first resolved the statement's ends, the others found
-- their id in rota.resolved), about 12 µs a step of a fan-in. A settling transaction sets it
-- too: resolve_dependents settles the cascades of the cancels it makes itself.

CREATE TABLE {schema}.job_settling (
    dep_id bigint PRIMARY KEY,
    state text NOT NULL
);

CREATE OR REPLACE FUNCTION {schema}.resolve_dependents(ended_ids bigint[], ended_states text[], ended_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := ended_ids;
    frontier_states text[] := ended_states;
    setting text := current_setting('rota.settle_budget', true);
    budget bigint; -- edges this transaction may still resolve; NULL: no bound
    e_jobs bigint[];
    e_deps bigint[];
BEGIN
    IF setting IS NOT NULL AND setting <> '' THEN
        budget := setting::bigint;
    END IF;
    WHILE cardinality(frontier) > 0 LOOP
        IF budget IS NULL THEN
            WITH edges AS (
                DELETE FROM {schema}.job_deps d WHERE d.dep_id = ANY (frontier)
                RETURNING d.job_id, d.dep_id AS dep
            )
            SELECT array_agg(job_id), array_agg(dep) INTO e_jobs, e_deps FROM edges;
        ELSIF budget > 0 THEN
            -- The edges taken are found through job_deps' key and deleted by their place.
            WITH edges AS (
                DELETE FROM {schema}.job_deps d WHERE d.ctid = ANY (ARRAY(
                    SELECT x.ctid FROM {schema}.job_deps x WHERE x.dep_id = ANY (frontier) LIMIT budget))
                RETURNING d.job_id, d.dep_id AS dep
            )
            SELECT array_agg(job_id), array_agg(dep) INTO e_jobs, e_deps FROM edges;
            budget := budget - coalesce(cardinality(e_jobs), 0);
        ELSE
            e_jobs := NULL;
        END IF;
        IF budget IS NOT NULL AND budget <= 0 THEN
            -- Used up: the ends of this round whose edges are left wait in job_settling (a
            -- deleted job's as ''), and the caller is told to settle them.
            INSERT INTO {schema}.job_settling (dep_id, state)
            SELECT f.dep, coalesce(f.dep_state, '') FROM unnest(frontier, frontier_states) AS f(dep, dep_state)
            WHERE EXISTS (SELECT 1 FROM {schema}.job_deps d WHERE d.dep_id = f.dep)
            ON CONFLICT (dep_id) DO NOTHING;
            PERFORM set_config('rota.parked', '1', true);
        END IF;
        IF e_jobs IS NULL THEN
            EXIT;
        END IF;
        WITH edges AS (
            SELECT * FROM unnest(e_jobs, e_deps) AS ed(job_id, dep)
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
    IF budget IS NOT NULL THEN
        PERFORM set_config('rota.settle_budget', greatest(budget, 0)::text, true);
    END IF;
END
$$;

-- settle_parked takes up to max_ends parked ends that no other settler holds and resolves
-- their edges within the transaction's budget, at the store's time at (a dependent released now
-- is scheduled only if its run_at is still ahead now), parking again what it leaves. It reports
-- whether it took any end and some are still parked: a settler that finds every entry held by
-- others stops, and those others, or the leader's rescuer, finish. One resolution per
-- transaction locks its dependents in one id order, as a completion's does.
-- The ends' jobs are locked first (FOR SHARE): a job made to run again meanwhile either waits
-- for this transaction, and then its jobs_reopened finds the entry parked again, or made this
-- one wait, and then its entry is gone; an end whose job no longer ended is not settled (one
-- deleted is).
CREATE FUNCTION {schema}.settle_parked(max_ends integer, at timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    picked bigint[];
    ids bigint[];
    states text[];
BEGIN
    picked := ARRAY(SELECT p.dep_id FROM {schema}.job_settling p ORDER BY p.dep_id LIMIT max_ends
        FOR UPDATE SKIP LOCKED);
    IF cardinality(picked) = 0 THEN
        RETURN false;
    END IF;
    PERFORM 1 FROM {schema}.jobs j WHERE j.id = ANY (picked) ORDER BY j.id FOR SHARE OF j;
    WITH taken AS (
        DELETE FROM {schema}.job_settling s WHERE s.dep_id = ANY (picked)
        RETURNING s.dep_id, s.state
    )
    SELECT array_agg(t.dep_id ORDER BY t.dep_id), array_agg(nullif(t.state, '') ORDER BY t.dep_id)
    INTO ids, states
    FROM taken t LEFT JOIN {schema}.jobs j ON j.id = t.dep_id
    WHERE j.id IS NULL OR j.state IN ('completed', 'cancelled', 'discarded', 'expired');
    IF ids IS NOT NULL THEN
        PERFORM {schema}.resolve_dependents(ids, states, at);
    END IF;
    RETURN EXISTS (SELECT 1 FROM {schema}.job_settling);
END
$$;

-- jobs_reopened forgets the parked end of a job made to run again.
CREATE FUNCTION {schema}.jobs_reopened() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.job_settling WHERE dep_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_reopened AFTER UPDATE OF state ON {schema}.jobs FOR EACH ROW
    WHEN (OLD.has_dependents
        AND OLD.state IN ('completed', 'cancelled', 'discarded', 'expired')
        AND NEW.state NOT IN ('completed', 'cancelled', 'discarded', 'expired'))
    EXECUTE FUNCTION {schema}.jobs_reopened();

-- jobs_ended stays off the rows of a transaction that resolves its ends itself (a completion,
-- a settling): only transactions without a budget use it, and they never park an end.
DROP TRIGGER jobs_ended ON {schema}.jobs;
CREATE TRIGGER jobs_ended AFTER UPDATE OF state ON {schema}.jobs FOR EACH ROW
    WHEN (NEW.has_dependents
        AND NEW.state IN ('completed', 'cancelled', 'discarded', 'expired')
        AND OLD.state NOT IN ('completed', 'cancelled', 'discarded', 'expired')
        AND current_setting('rota.resolving', true) IS DISTINCT FROM '1')
    EXECUTE FUNCTION {schema}.jobs_ended();
