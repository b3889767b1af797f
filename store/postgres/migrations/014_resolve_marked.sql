-- 014: the later trigger calls of a statement that ended jobs with dependents find their job
-- among those the first call resolved, in a setting, instead of looking up its edges.
--
-- The first call of a statement resolves every end of the statement (008); each of the other
-- calls looked up its own job in job_deps to find that out, one query of ~5 µs per job: a
-- fan-in's steps, 100 completed per statement, spent half their trigger time so. The first call
-- now writes the ids it resolved into the transaction's setting rota.resolved, after the jobs
-- table's oid (the ids of two schemas are not the same jobs), and a call that finds its job
-- there returns: a read of a setting and a search of a short string. Whatever statement ended
-- the job, a job in that list has had its edges deleted, and a job that has ended gains no edges
-- afterwards (an insert waits only for jobs that have not ended), so nothing is skipped that
-- still had dependents to count off, however statements share a time or a function runs them.
-- A resolution of more than 1,000 ends leaves no list (its calls would search a long string);
-- their calls look their edges up, as before.
-- The first call no longer picks out which of the statement's ends have edges left either: the
-- resolution's DELETE finds those.

CREATE OR REPLACE FUNCTION {schema}.jobs_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    states text[];
    resolved text;
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    resolved := current_setting('rota.resolved', true);
    IF starts_with(resolved, TG_RELID::text || ':') AND strpos(resolved, ',' || NEW.id || ',') > 0 THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {schema}.job_deps WHERE dep_id = NEW.id) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(j.id ORDER BY j.id), array_agg(j.state ORDER BY j.id) INTO ids, states
    FROM {schema}.jobs j
    WHERE j.finalized_at = NEW.finalized_at AND j.has_dependents
        AND j.state IN ('completed', 'cancelled', 'discarded', 'expired');
    IF cardinality(ids) <= 1000 THEN
        PERFORM set_config('rota.resolved', TG_RELID::text || ':,' || array_to_string(ids, ',') || ',', true);
    END IF;
    PERFORM {schema}.resolve_dependents(ids, states, NEW.finalized_at);
    RETURN NULL;
END
$$;
