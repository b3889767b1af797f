-- 006: the claim index holds available jobs only; due scheduled and retryable jobs are made
-- available by the claim itself, through an index of their own.
--
-- With every claimable state in one index, a claim that found fewer due jobs than it asked for
-- walked every not-yet-due job of its queue before it could stop: a queue holding a million jobs
-- scheduled for tomorrow cost 270 ms a claim, every second, on an idle node. Ordered by due time
-- apart from the available jobs, the due ones are a range that ends at the first future one.
DROP INDEX {schema}.jobs_claim;
CREATE INDEX jobs_claim ON {schema}.jobs (queue, priority DESC, run_at, id) WHERE state = 'available';
CREATE INDEX jobs_due ON {schema}.jobs (queue, run_at) WHERE state IN ('scheduled', 'retryable');
