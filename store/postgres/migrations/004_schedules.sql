-- 004: cron schedules (store.Schedule), and the schedule that planned a job.

-- Stores keep the expression and zone as text and never interpret them: package cron does, on the
-- leader. last_planned is NULL until the planner first plans the schedule; PlanSchedule compares
-- it with IS NOT DISTINCT FROM, so NULL matches the zero time. Every write of a schedule locks its
-- row first, which orders planners, edits and removals of one schedule.
CREATE TABLE {schema}.schedules (
    name         text PRIMARY KEY,
    expr         text        NOT NULL,
    zone         text        NOT NULL,
    kind         text        NOT NULL,
    queue        text        NOT NULL,
    args         json,
    priority     integer     NOT NULL,
    max_attempts integer     NOT NULL,
    tags         text[]      NOT NULL DEFAULT '{}',
    missed       text        NOT NULL,
    paused       boolean     NOT NULL DEFAULT false,
    last_planned timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- NULL for jobs no schedule planned. A nullable column without a default is added without
-- rewriting the table, however many jobs it holds.
ALTER TABLE {schema}.jobs ADD COLUMN schedule text;

-- A schedule's occurrences that have not started, which editing or removing it cancels. Only
-- planned jobs that still wait are in it, so other jobs pay nothing for it.
CREATE INDEX jobs_schedule ON {schema}.jobs (schedule) WHERE state = 'scheduled' AND schedule IS NOT NULL;
