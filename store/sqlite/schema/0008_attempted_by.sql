-- The owner of a job's latest claim. owner is cleared when the attempt ends; attempted_by stays
-- until the next claim, so that a finished job still says which node ran it last.
ALTER TABLE jobs ADD COLUMN attempted_by TEXT;
