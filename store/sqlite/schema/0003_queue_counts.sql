-- Jobs per queue and state, kept by the store in the same transaction as every change of state,
-- so that QueueStats reads a few rows instead of counting the whole table: producers check the
-- load of a queue before best-effort inserts.
CREATE TABLE queue_counts (
	queue TEXT    NOT NULL,
	state TEXT    NOT NULL,
	n     INTEGER NOT NULL,
	PRIMARY KEY (queue, state)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts (queue, state, n) SELECT queue, state, count(*) FROM jobs GROUP BY queue, state;
