// Package cron parses a schedule's expression and time zone and computes its occurrences: the
// instants at which the leader enqueues the schedule's job. It is pure computation: it never reads
// the clock, the store or the environment (not even the machine's local zone), so every node
// computes the same occurrences for the same schedule, which is what lets an occurrence have a
// unique key.
//
// # Expressions
//
// An expression is one of
//   - five fields, minute hour day-of-month month day-of-week ("30 9 * * mon-fri");
//   - six fields, with a leading seconds field ("*/10 * * * * *");
//   - a descriptor: @yearly (or @annually), @monthly, @weekly, @daily (or @midnight), @hourly;
//   - @every with a Go duration of whole seconds, at least one ("@every 90s", "@every 1h30m").
//
// Fields are parsed by github.com/robfig/cron/v3, so its syntax and its error messages apply: *, ?,
// lists, ranges, steps, and English month and weekday names; day-of-week is 0-7, 0 and 7 both
// Sunday ("5-7" is Friday to Sunday). Beside them, the day forms crontab users write: L in
// day-of-month is the month's last day ("0 12 L * *"), nL in day-of-week the month's last weekday
// n ("0 9 * * 5L", the last Friday), n#k its k-th weekday n ("0 9 * * 1#2", the second Monday);
// they mix with plain values in a list. L alone in day-of-week and W (nearest weekday) are
// rejected. As in Vixie cron, when both day-of-month and day-of-week are restricted (neither is *
// or ?) a day matches if either does. An expression that can never fire ("0 0 30 2 *") is
// rejected.
//
// Only robfig's parser is used, not its Next: in a DST gap or overlap it does not follow the rule
// below (it skips a 02:30 job on New York's spring-forward day and runs a 01:30 job twice on
// fall-back day), it rounds @every durations, and it gives up after five years, which misses
// February 29th across 2100.
//
// The zone is separate from the expression: an IANA name such as "Europe/Berlin", UTC when empty.
// A CRON_TZ= or TZ= prefix in the expression is rejected, so a schedule's zone has one source.
// "Local" is rejected too, since it would make occurrences depend on the machine.
//
// # Daylight saving time
//
// Field expressions describe local wall-clock times in the schedule's zone, and a zone's clock
// sometimes skips (spring forward) or repeats (fall back) an interval. What a wall-clock time that
// does not exist, or exists twice, means depends on the kind of schedule:
//
//   - A schedule is hourly when its hour field matches all 24 hours (*, */1, 0-23, @hourly,
//     "*/15 * * * *"). Such a schedule is about elapsed time within every hour, so it follows the
//     clock: its times in a skipped interval do not happen (on spring-forward day in New York,
//     "0 * * * *" has no 02:00) and its times in a repeated interval happen twice (on fall-back
//     day it fires at 01:00 EDT and again at 01:00 EST, an hour later, because that hour really
//     passes twice).
//   - Every other field schedule is fixed-time: it names times of day ("30 2 * * *", "0 9-17 * * *",
//     "0 */2 * * *"), and each of them runs once on each day it names. A time in a skipped interval runs
//     at the first instant after the gap (02:30 on spring-forward day in New York runs at 03:00
//     EDT); all of a schedule's times inside one gap run once, together, at that instant, and at
//     most once with a time the schedule also names there. A time in a repeated interval runs the
//     first time only (01:30 on fall-back day runs at 01:30 EDT, not again at 01:30 EST). So a
//     daily job is never skipped and never doubled.
//   - @every d is a fixed duration on absolute time, unaffected by the zone: it fires at the
//     instants that are whole multiples of d since the Unix epoch (1970-01-01T00:00:00Z). Aligning
//     to the epoch rather than to when someone looked makes its occurrences the same on every node.
//     So "@every 1h" fires on the hour in UTC, which in Asia/Kolkata is half past the hour.
//
// The rule for hourly schedules looks only at the hour field, not at how often the schedule fires
// overall: "0,30 2 * * *" fires twice within one hour but names two times of day, and a person who
// wrote it expects it to run on spring-forward day (once, at 03:00 in New York), not to be skipped.
//
// # Never
//
// Next returns the zero time when there is no next occurrence; callers treat it as "not
// scheduled", never as an instant. Parse rejects expressions that can never fire, so for a parsed
// schedule this happens only past the end of the year 9999, where the search stops, or if a zone
// database had hundreds of transitions within the nine years a search may span.
package cron
