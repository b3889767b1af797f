-- The fleet's counts per minute (store.Stats): one row per node, minute, queue and kind, which
-- only that node writes. minute is the minute's start in microseconds; latency and duration are
-- JSON arrays of bucket counts.
CREATE TABLE stats (
	minute    INTEGER NOT NULL,
	node      TEXT NOT NULL,
	queue     TEXT NOT NULL,
	kind      TEXT NOT NULL,
	completed INTEGER NOT NULL,
	failed    INTEGER NOT NULL,
	discarded INTEGER NOT NULL,
	cancelled INTEGER NOT NULL,
	latency   TEXT NOT NULL,
	duration  TEXT NOT NULL,
	PRIMARY KEY (minute, node, queue, kind)
) STRICT, WITHOUT ROWID;
