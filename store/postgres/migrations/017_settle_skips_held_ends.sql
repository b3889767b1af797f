-- 017: a settler leaves parked the ends whose jobs another transaction holds.
--
-- settle_parked locked its entries in job_settling, then waited for their jobs (FOR SHARE). A
-- job made to run again (Retry, RetryWorkflow) holds its row first and then deletes its entry
-- (jobs_reopened), which the settler held: each waited for the other until PostgreSQL aborted
-- one of them, a Retry failing with a deadlock or a settling put off to the next rescue. Now the
-- settler takes only the ends whose jobs it can lock at once, and those whose job is gone; it
-- holds the entries of the others until it commits, so the transaction holding such a job waits
-- for the settler, never the other way round, and then finds the entry to delete. A settler
-- that can take none of the ends it picked stops, as one that finds every entry held does:
-- whoever holds their jobs, or the leader's rescuer, settles them.
CREATE OR REPLACE FUNCTION {schema}.settle_parked(max_ends integer, at timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    picked bigint[];
    held bigint[];
    ids bigint[];
    states text[];
BEGIN
    picked := ARRAY(SELECT p.dep_id FROM {schema}.job_settling p ORDER BY p.dep_id LIMIT max_ends
        FOR UPDATE SKIP LOCKED);
    IF cardinality(picked) = 0 THEN
        RETURN false;
    END IF;
    held := ARRAY(SELECT j.id FROM {schema}.jobs j WHERE j.id = ANY (picked) ORDER BY j.id
        FOR SHARE OF j SKIP LOCKED);
    picked := ARRAY(SELECT p FROM unnest(picked) p
        WHERE p = ANY (held) OR NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.id = p));
    IF cardinality(picked) = 0 THEN
        RETURN false;
    END IF;
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
