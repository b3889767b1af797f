-- 010: the fleet's counts per minute (store.Stats): one row per node, minute, queue and kind,
-- which only that node writes, so no row is shared by the fleet. latency and duration are JSON
-- arrays of bucket counts.
CREATE TABLE {schema}.stats (
    minute    timestamptz NOT NULL,
    node      text NOT NULL,
    queue     text NOT NULL,
    kind      text NOT NULL,
    completed bigint NOT NULL,
    failed    bigint NOT NULL,
    discarded bigint NOT NULL,
    cancelled bigint NOT NULL,
    latency   jsonb NOT NULL,
    duration  jsonb NOT NULL,
    PRIMARY KEY (minute, node, queue, kind)
);
