-- How often a node refreshes its row (store.NodeInfo.RegisterEvery), in nanoseconds: a node
-- unseen for two of its own intervals is stale, whatever interval it runs with.
ALTER TABLE nodes ADD COLUMN register_every INTEGER NOT NULL DEFAULT 0;
