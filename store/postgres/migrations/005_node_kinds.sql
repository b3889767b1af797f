-- 005: the kinds each node runs, so operators can see which kinds no live node handles.
ALTER TABLE {schema}.nodes ADD COLUMN kinds text[] NOT NULL DEFAULT '{}';
