-- The kinds each node runs (JSON array), so operators can see which kinds no live node handles.
ALTER TABLE nodes ADD COLUMN kinds TEXT NOT NULL DEFAULT '[]';
