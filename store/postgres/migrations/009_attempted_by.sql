-- 009: the owner of a job's latest claim. owner is cleared when the attempt ends; attempted_by
-- stays until the next claim, so that a finished job still says which node ran it last. A
-- nullable column without a default: adding it rewrites no row.
ALTER TABLE {schema}.jobs ADD COLUMN attempted_by text;
