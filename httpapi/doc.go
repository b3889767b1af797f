// Package httpapi serves rota over HTTP with JSON, for producers and operators that are not
// written in Go: enqueue jobs, read, cancel, retry and wait for them, insert and steer workflows
// and batches, pause and resume queues, manage cron schedules, and see which nodes serve the
// store and which of them leads.
//
// Every request except GET /healthz carries the API token: "Authorization: Bearer TOKEN". The
// routes, under /v1:
//
//	POST   /v1/jobs                      enqueue one job                  201, or 200 for a duplicate
//	POST   /v1/jobs/batch                enqueue {"jobs": [...]}, all or none
//	GET    /v1/jobs                      list: ?state=a,b &queue= &kind= &workflow= &after=ID &limit=N &order=desc
//	GET    /v1/jobs/{id}                 one job, with every attempt's error
//	POST   /v1/jobs/{id}/cancel          cancel (a running job ends once its handler returns)
//	POST   /v1/jobs/{id}/retry           run a finished job again
//	GET    /v1/jobs/{id}/wait?timeout=   block until the job is final or the timeout passes
//	POST   /v1/workflows                 insert {"steps": [{"name", "kind", "after": [...], ...}]}, all or none
//	GET    /v1/workflows                 newest first, with status and steps per state: ?before=ID &limit=N
//	GET    /v1/workflows/{id}            one workflow (or batch) with every step
//	POST   /v1/workflows/{id}/cancel     cancel every step that has not ended
//	POST   /v1/workflows/{id}/retry      run the failed steps again, in order
//	POST   /v1/batches                   insert {"jobs": [...], "callback": {...}}: the callback runs once all ended
//	POST   /v1/batches/{callback_id}/jobs  add jobs while the batch is open (its callback not released)
//	GET    /v1/queues                    jobs per state in every queue, and which are paused
//	POST   /v1/queues/{name}/pause       stop every node from claiming from the queue
//	POST   /v1/queues/{name}/resume
//	GET    /v1/schedules                 every cron schedule with its next runs
//	GET    /v1/schedules/{name}
//	PUT    /v1/schedules/{name}          create or replace
//	DELETE /v1/schedules/{name}
//	POST   /v1/schedules/{name}/pause
//	POST   /v1/schedules/{name}/resume
//	GET    /v1/status                    nodes and the leader
//
// Errors are {"error": "what happened", "code": "invalid"} with a status that says whose fault
// it was: 400 invalid input (unknown fields included, and args of the built-in kinds exec and
// http that their workers would refuse), 401 no or a wrong token, 403 a browser request sent by
// a page of another site, 404 not found, 409 the job is running or the batch is closed, 413 a
// body over the size limit, 421 a Host not served without a token (see Config.NoAuth), 429 a
// best-effort insert refused because its queue is busy, or a client that sent too many wrong
// tokens (with Retry-After), 501 status on a store without a node registry, 503 the store
// cannot take writes, did not answer in time, or the caller left, 500 anything else (and
// logged).
//
// Wrong tokens are limited per client address: a burst of 10, then one per 6 s; a
// client over the limit gets 429 for every request, the right token included, until it may try
// again.
package httpapi
