-- 012: a workflow's steps are found through a table of their own, (workflow, job id), written
-- when a step is inserted and when it is deleted, instead of the index jobs_workflow. The index
-- took a new entry at every update of a step: its release, its claim and its completion each
-- write a new row version that cannot be a HOT update (the state is in the partial indexes'
-- predicates), so a step paid three index insertions that only listing a workflow needed.
CREATE TABLE {schema}.workflow_steps (
    workflow text COLLATE "C" NOT NULL,
    job_id bigint NOT NULL,
    PRIMARY KEY (workflow, job_id)
);

INSERT INTO {schema}.workflow_steps (workflow, job_id)
SELECT workflow, id FROM {schema}.jobs WHERE workflow IS NOT NULL;

DROP INDEX {schema}.jobs_workflow;

-- The insert of a step writes its row here itself (insertDepsSQL); a delete, from any path
-- (Delete, the pruner), takes it out through this trigger.
CREATE FUNCTION {schema}.workflow_step_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.workflow_steps WHERE workflow = OLD.workflow AND job_id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_step_deleted AFTER DELETE ON {schema}.jobs
    FOR EACH ROW WHEN (OLD.workflow IS NOT NULL) EXECUTE FUNCTION {schema}.workflow_step_deleted();
