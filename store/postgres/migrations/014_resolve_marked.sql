-- 014: the later trigger calls of a statement that ended jobs with dependents know from a
-- setting that the first call resolved them all, instead of looking up each job's edges.
--
-- The first call of a statement resolves every end of the statement (008); each of the other
-- calls looked up its own job in job_deps to find that out, one query of ~5 µs per job: a
-- fan-in's steps, 100 completed per statement, spent half their trigger time so. The first call
-- now leaves a mark in the transaction's setting rota.resolved, the statement's start time and
-- the end time it resolved, and a call that finds its own statement and time there returns
-- (a read of a setting, well under a microsecond). The first call no longer looks up which of
-- the statement's ends have edges left either: the resolution's DELETE finds those. A later statement of the transaction starts
-- at another time and resolves its own ends. The mark would also cover a second query inside
-- one statement (a function of one's own ending jobs twice at the same time): rota's statements
-- end jobs once each, and the ends resolve_dependents makes are resolved by its own loop.

CREATE OR REPLACE FUNCTION {schema}.jobs_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    states text[];
    mark text;
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    mark := statement_timestamp()::text || ' ' || NEW.finalized_at::text;
    IF current_setting('rota.resolved', true) = mark THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {schema}.job_deps WHERE dep_id = NEW.id) THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('rota.resolved', mark, true);
    SELECT array_agg(j.id ORDER BY j.id), array_agg(j.state ORDER BY j.id) INTO ids, states
    FROM {schema}.jobs j
    WHERE j.finalized_at = NEW.finalized_at AND j.has_dependents
        AND j.state IN ('completed', 'cancelled', 'discarded', 'expired');
    PERFORM {schema}.resolve_dependents(ids, states, NEW.finalized_at);
    RETURN NULL;
END
$$;
