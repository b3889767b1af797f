-- 002: leases and the node registry.

-- Named, fenced locks: the leader's lease, singleton workers' leases. A lease is held until
-- expires_at (inclusive) by owner; an empty owner means it was released. Tokens come from one
-- sequence, so a token is never handed out twice, even across names.
CREATE SEQUENCE {schema}.lease_tokens;

CREATE TABLE {schema}.leases (
    name        text PRIMARY KEY,
    owner       text        NOT NULL,
    token       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- The nodes that run, as they register themselves, for operators.
CREATE TABLE {schema}.nodes (
    id         text PRIMARY KEY,
    host       text        NOT NULL,
    pid        integer     NOT NULL,
    version    text        NOT NULL,
    queues     text[]      NOT NULL DEFAULT '{}',
    started_at timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL
);
