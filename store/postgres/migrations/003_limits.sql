-- 003: fleet-wide limits on a queue or a kind, which claims enforce (store.Limit).

-- One row per limit; a limit with neither a cap nor a rate has none. A claim that a limit
-- applies to locks its row (FOR UPDATE) for the claim's transaction: claims under one limit take
-- turns, so each counts the jobs the one before it started. Claims no limit applies to never
-- touch the rows. period is in microseconds.
CREATE TABLE {schema}.limits (
    scope       text   NOT NULL CHECK (scope IN ('queue', 'kind')),
    name        text   NOT NULL,
    max_running bigint NOT NULL CHECK (max_running >= 0),
    rate        bigint NOT NULL CHECK (rate >= 0),
    period      bigint NOT NULL CHECK (period >= 0),
    PRIMARY KEY (scope, name)
);

-- The starts of rate-limited queues and kinds: n jobs claimed at one time under one limit. Kept
-- apart from the jobs because a job's attempted_at holds only its last start and a pruned job
-- holds none. Only claims holding the limit's row lock write here; each sums its window through
-- the index and deletes the rows that left it, so a limit has at most rate rows.
CREATE TABLE {schema}.limit_starts (
    scope text        NOT NULL,
    name  text        NOT NULL,
    at    timestamptz NOT NULL,
    n     integer     NOT NULL
);

CREATE INDEX limit_starts_window ON {schema}.limit_starts (scope, name, at);
