-- A completion resolves at most a bounded number of its ends' dependency edges in its own
-- transaction (WithSettleBatch) and parks the ends whose edges are left here, with the state
-- they ended in ('' for a job deleted before it ended); the Store settles them in further
-- transactions, each as bounded, before Complete returns (settle.go). A fan-out's root no
-- longer holds the writer for the whole of its release: its first steps run while the rest are
-- released. The version moves so that earlier builds, which know nothing of parked ends, refuse
-- the file.
CREATE TABLE job_settling (
	dep_id INTEGER PRIMARY KEY,
	state  TEXT NOT NULL
) STRICT;
