package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
	"github.com/rotahq/rota/store"
)

func (a *app) cronCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cron",
		Short: "Add, list, pause and remove schedules that enqueue jobs periodically",
		Long: `Schedules are stored with the jobs, so every node sees them and the leader enqueues each
occurrence exactly once, even across a change of leader.

Expressions: 5 fields (minute hour day-of-month month day-of-week), an optional leading seconds
field, @yearly @monthly @weekly @daily @hourly, or "@every 90s". Day-of-week is 0-7 (0 and 7 are
Sunday); L is the last day of the month, 5L the last Friday, 1#2 the second Monday. Times are
read in --zone (or --tz).
Across daylight-saving changes a fixed-time job runs once a day, never skipped nor doubled;
schedules that fire every hour or more often follow the clock.`,
	}
	cmd.AddCommand(a.cronAddCmd(), a.cronListCmd(), a.cronShowCmd(), a.cronPauseCmd(true), a.cronPauseCmd(false), a.cronRemoveCmd())
	return group(cmd)
}

type cronAddOptions struct {
	zone, tz, args, queue, missed string
	priority, maxAttempts         int
}

func (a *app) cronAddCmd() *cobra.Command {
	var o cronAddOptions
	cmd := &cobra.Command{
		Use:   "add NAME EXPR KIND [flags] [-- PROGRAM ARGS...]",
		Short: "Add a schedule, or replace the one of that name",
		Example: `  rota cron add nightly-backup '30 2 * * *' exec --zone Europe/Berlin -- /usr/local/bin/backup.sh
  rota cron add ping '@every 5m' http --args '{"url":"https://example.com/health"}' --missed skip`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, expr := args[0], args[1]
			rest := args[2:]
			var program []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 3 {
					return errors.New("give NAME EXPR KIND before --, as in: rota cron add NAME '0 * * * *' exec -- PROGRAM ARGS")
				}
				rest, program = args[2:3], args[3:]
				if len(program) == 0 {
					return errors.New("no program after --")
				}
			} else if len(rest) > 1 {
				return fmt.Errorf("unexpected arguments %q after the kind (quote the expression: '0 * * * *')", rest[1:])
			}
			kind := rest[0]
			if f := cmd.Flags(); f.Changed("tz") {
				if f.Changed("zone") && o.zone != o.tz {
					return fmt.Errorf("--zone %s and --tz %s name two zones; give one", o.zone, o.tz)
				}
				o.zone = o.tz
			}
			raw, err := a.jobArgs(kind, o.args, program)
			if err != nil {
				return err
			}
			if !builtin.IsKind(kind) {
				fmt.Fprintf(a.stderr, "rota: warning: %q is not a built-in kind: its jobs wait until a node that registers it runs them\n", kind)
			}
			return a.withClientCreating(cmd, func(client *rota.Client) error {
				_, getErr := client.GetSchedule(cmd.Context(), name)
				row, err := client.UpsertSchedule(cmd.Context(), rota.Schedule{
					Name: name, Expr: expr, Zone: o.zone, Args: rota.RawArgs{KindName: kind, JSON: raw},
					Opts:   &rota.InsertOpts{Queue: o.queue, Priority: o.priority, MaxAttempts: o.maxAttempts},
					Missed: rota.MissedPolicy(o.missed),
				})
				if err != nil {
					return err
				}
				if a.jsonOutput() {
					return a.printJSON(row)
				}
				verb := "added"
				if getErr == nil {
					verb = "replaced"
				}
				fmt.Fprintf(a.stdout, "schedule %s %s: %s (%s), next at %s\n", name, verb, row.Expr, row.Zone, nextTimes(row, 1))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.zone, "zone", "UTC", "IANA time zone the expression is read in, such as Europe/Berlin")
	f.StringVar(&o.tz, "tz", "UTC", "the same as --zone, as crontab users write it (CRON_TZ)")
	f.StringVar(&o.args, "args", "", "the jobs' args as a JSON object, or @FILE, or - for the standard input")
	f.StringVar(&o.queue, "queue", rota.QueueDefault, "the queue the jobs go to")
	f.IntVar(&o.priority, "priority", 0, "the jobs' priority; higher runs first")
	f.IntVar(&o.maxAttempts, "max-attempts", 0, fmt.Sprintf("attempts per job before it is discarded (default %d)", rota.MaxAttemptsDefault))
	f.StringVar(&o.missed, "missed", string(rota.MissedRunOnce), "occurrences missed while every node was down: run-once (one catch-up job) or skip")
	return cmd
}

// nextTimes shows a schedule's next n occurrences in its own zone.
func nextTimes(row *rota.ScheduleRow, n int) string {
	if row.Paused {
		return "- (paused)"
	}
	if len(row.Next) == 0 {
		return "-"
	}
	parts := make([]string, 0, n)
	for _, t := range row.Next[:min(n, len(row.Next))] {
		parts = append(parts, t.Format("2006-01-02 15:04:05 MST"))
	}
	return strings.Join(parts, ", ")
}

func (a *app) cronListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List schedules with their next three run times",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				rows, err := client.ListSchedules(cmd.Context())
				if err != nil {
					return err
				}
				if a.jsonOutput() {
					if rows == nil {
						rows = []*rota.ScheduleRow{}
					}
					return a.printJSON(rows)
				}
				if len(rows) == 0 {
					fmt.Fprintln(a.stdout, "no schedules")
					return nil
				}
				tw := newTable(a.stdout)
				fmt.Fprintln(tw, "NAME\tEXPR\tZONE\tKIND\tQUEUE\tMISSED\tNEXT")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Expr, r.Zone, r.Kind, r.Queue, r.Missed, nextTimes(r, 3))
				}
				tw.Flush()
				a.warnUnserved(cmd, client, rows)
				return nil
			})
		},
	}
}

// warnUnserved points out schedules whose jobs no registered node would run: no node serves their
// queue with a worker for their kind, so the jobs would pile up unrun.
func (a *app) warnUnserved(cmd *cobra.Command, client *rota.Client, rows []*rota.ScheduleRow) {
	reg, ok := client.Store().(store.NodeRegistry)
	if !ok {
		return
	}
	nodes, err := reg.ListNodes(cmd.Context())
	if err != nil {
		return
	}
	for _, r := range rows {
		served := false
		for _, n := range nodes {
			served = served || (slices.Contains(n.Queues, r.Queue) && slices.Contains(n.Kinds, r.Kind))
		}
		if !served {
			fmt.Fprintf(a.stderr, "rota: warning: schedule %s enqueues %s jobs into queue %q, and no running node runs %s jobs from that queue\n",
				r.Name, r.Kind, r.Queue, r.Kind)
		}
	}
}

func (a *app) cronShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a schedule: its job, its policy, the last occurrence planned and the next ones",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				row, err := client.GetSchedule(cmd.Context(), args[0])
				if err != nil {
					return a.scheduleError(args[0], err)
				}
				if a.jsonOutput() {
					return a.printJSON(row)
				}
				tw := newTable(a.stdout)
				field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
				field("Name", row.Name)
				field("Expr", row.Expr)
				field("Zone", row.Zone)
				field("Kind", row.Kind)
				field("Queue", row.Queue)
				field("Priority", fmt.Sprint(row.Priority))
				field("Max attempts", fmt.Sprint(row.MaxAttempts))
				field("Missed", string(row.Missed))
				field("Paused", fmt.Sprint(row.Paused))
				field("Last planned", fmtTime(row.LastPlanned))
				field("Next", nextTimes(row, 3))
				tw.Flush()
				fmt.Fprintf(a.stdout, "Args:\n  %s\n", prettyJSON(row.Args, "  "))
				return nil
			})
		},
	}
}

func (a *app) scheduleError(name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no schedule named %q in %s", name, a.storeName())
	}
	return err
}

func (a *app) cronPauseCmd(pause bool) *cobra.Command {
	use, short := "resume NAME", "Plan a paused schedule again (missed occurrences follow its missed policy)"
	if pause {
		use, short = "pause NAME", "Stop planning a schedule's occurrences (ones already planned still run)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				var err error
				if pause {
					err = client.PauseSchedule(cmd.Context(), args[0])
				} else {
					err = client.ResumeSchedule(cmd.Context(), args[0])
				}
				if err != nil {
					return a.scheduleError(args[0], err)
				}
				if a.jsonOutput() {
					// The schedule as it is now, as the HTTP API answers.
					row, err := client.GetSchedule(cmd.Context(), args[0])
					if err != nil {
						return a.scheduleError(args[0], err)
					}
					return a.printJSON(row)
				}
				fmt.Fprintf(a.stdout, "schedule %s %s\n", args[0], map[bool]string{true: "paused", false: "resumed"}[pause])
				return nil
			})
		},
	}
}

func (a *app) cronRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a schedule and cancel its occurrences that have not started",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				if err := client.DeleteSchedule(cmd.Context(), args[0]); err != nil {
					return a.scheduleError(args[0], err)
				}
				if a.jsonOutput() {
					return a.printJSON(map[string]any{"name": args[0], "deleted": true})
				}
				fmt.Fprintf(a.stdout, "schedule %s removed\n", args[0])
				return nil
			})
		},
	}
}
