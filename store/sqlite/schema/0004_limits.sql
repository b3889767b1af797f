-- Fleet-wide limits on a queue or a kind, which claims enforce (store.Limit). A limit with
-- neither a cap nor a rate has no row. Periods are integer microseconds, like every time here.
CREATE TABLE limits (
	scope       TEXT    NOT NULL CHECK (scope IN ('queue', 'kind')),
	name        TEXT    NOT NULL,
	max_running INTEGER NOT NULL CHECK (max_running >= 0),
	rate        INTEGER NOT NULL CHECK (rate >= 0),
	period      INTEGER NOT NULL CHECK (period >= 0),
	PRIMARY KEY (scope, name)
) STRICT, WITHOUT ROWID;

-- The starts of rate-limited queues and kinds: n jobs claimed at one time under one limit. Kept
-- apart from the jobs because a job's attempted_at holds only its last start and a pruned job
-- holds none. A claim under a rate limit sums its window through the index, and deletes the
-- rows that left the window, so a limit has at most Rate rows.
CREATE TABLE limit_starts (
	scope TEXT    NOT NULL,
	name  TEXT    NOT NULL,
	at    INTEGER NOT NULL,
	n     INTEGER NOT NULL
) STRICT;

CREATE INDEX limit_starts_window ON limit_starts (scope, name, at);
