-- Named leases (the leader, singleton workers). A released lease keeps its row with no owner, so
-- that its token keeps growing: the next holder's token is larger than every earlier one.
CREATE TABLE leases (
	name        TEXT    PRIMARY KEY,
	owner       TEXT    NOT NULL,
	token       INTEGER NOT NULL,
	acquired_at INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The nodes that run on this store, as they last registered.
CREATE TABLE nodes (
	id         TEXT    PRIMARY KEY,
	host       TEXT    NOT NULL,
	pid        INTEGER NOT NULL,
	version    TEXT    NOT NULL,
	queues     TEXT    NOT NULL,
	started_at INTEGER NOT NULL,
	last_seen  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
