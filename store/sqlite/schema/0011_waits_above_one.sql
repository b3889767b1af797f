-- A pending job keeps a count in job_waits only while it waits for more than one dependency: one
-- that waits for one has none, and that one's end releases it (deps.go). The counts of one that
-- earlier versions wrote go. The version moves so that earlier builds, which read a job without
-- a count as waiting for nothing, refuse the file.
DELETE FROM job_waits WHERE pending = 1;
