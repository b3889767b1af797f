-- 018: a schedule's planned occurrences are found by the schedule alone, due or not.
--
-- The due ones that never started were found through the claim index of the schedule's queue,
-- so those planned into a queue the schedule has since left were missed when its timing changed
-- or it was removed, and ran. The index now holds available occurrences too; a claim takes a
-- job out of it as it leaves available.
DROP INDEX {schema}.jobs_schedule;
CREATE INDEX jobs_schedule ON {schema}.jobs (schedule)
    WHERE state IN ('scheduled', 'available') AND schedule IS NOT NULL;
