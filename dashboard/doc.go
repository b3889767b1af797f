// Package dashboard serves rota's web dashboard: the queues with their jobs per state, paused
// or not; jobs by state, queue, kind, tag, args text and creation time; one job with its args,
// result and every attempt's error and stack; the cron schedules with their next runs, each
// with a page of its recent occurrences and their outcomes; the nodes and the leader; the
// attempts this node ran per minute over the last hour (the overview reloads itself every 10 s);
// and workflows and batches, newest first, each with its steps' table and its graph, drawn on
// the server as SVG (a running workflow's page reloads itself every 5 s). An operator can pause
// and resume queues and schedules, run a schedule's job now, change a schedule's timing or
// remove it (once confirmed), and cancel and retry jobs and workflows.
//
// Pages are rendered on the server (html/template) and work without JavaScript. Signing in
// takes the API token; the browser then holds the random id of a session kept in the process's
// memory (a cookie: HttpOnly, SameSite=Strict, Secure when the browser came over TLS). A
// session ends on sign-out, SessionTTLDefault after it began, or when the process stops, so a
// restart signs everyone out. Failed sign-ins are limited per client address. Every form,
// signing in and out included, is refused when the browser says it came from another site
// (http.CrossOriginProtection). Without sign-in (NoAuth), only Host names no other site can
// point at the server are served, against DNS rebinding.
package dashboard
