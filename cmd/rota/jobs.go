package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/attempts"
	"github.com/rotahq/rota/store"
)

func (a *app) jobsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, show, cancel, retry and delete jobs",
	}
	cmd.AddCommand(a.jobsListCmd(), a.jobsShowCmd(), a.jobsCancelCmd(), a.jobsRetryCmd(), a.jobsDeleteCmd())
	return group(cmd)
}

func (a *app) jobsListCmd() *cobra.Command {
	var (
		states []string
		order  string
		desc   bool
		p      rota.ListParams
		f      listFlags
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first, one page at a time",
		Example: `  rota jobs list --state discarded,retryable
  rota jobs list --queue emails --limit 20 --after 120
  rota jobs list --order oldest
  rota jobs list --workflow w0193a5c2e0a1f3c2b1d4e5 --state cancelled
  rota jobs list --tag billing --args-path account.id=42
  rota jobs list --schedule nightly-report --created-after 24h
  rota jobs list --args-contains acme --created-after 2025-06-01T00:00:00Z
  rota jobs list -o json | jq '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range states {
				st := rota.State(strings.TrimSpace(s))
				if !st.Valid() {
					return fmt.Errorf("--state %q: use one of %s", s, statesList())
				}
				p.States = append(p.States, st)
			}
			if p.Limit < 1 {
				return fmt.Errorf("--limit %d: must be at least 1", p.Limit)
			}
			if err := f.apply(&p, time.Now()); err != nil {
				return err
			}
			if desc {
				fmt.Fprintln(a.stderr, "rota: --desc is deprecated: newest first is the default; --order oldest for the other way")
			}
			switch {
			case desc || order == "newest":
				p.Desc = true
			case order == "oldest":
			default:
				return fmt.Errorf("--order %q: newest or oldest", order)
			}
			if p.AfterID < 0 {
				return fmt.Errorf("--after %d: want a job id", p.AfterID)
			}
			return a.withClient(cmd, func(client *rota.Client) error {
				rows, err := client.List(cmd.Context(), p)
				if err != nil {
					return err
				}
				if a.jsonOutput() {
					if rows == nil {
						rows = []*rota.JobRow{}
					}
					return a.printJSON(rows)
				}
				a.printJobTable(rows)
				if len(rows) == p.Limit {
					next := fmt.Sprintf("--after %d", rows[len(rows)-1].ID)
					fmt.Fprintf(a.stderr, "more jobs may follow: add %s\n", next)
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&states, "state", nil, "only jobs in these states (repeat or separate with commas): "+statesList())
	fs.StringVar(&p.Queue, "queue", "", "only jobs of this queue")
	fs.StringVar(&p.Kind, "kind", "", "only jobs of this kind")
	fs.StringVar(&p.Workflow, "workflow", "", "only the steps of this workflow or batch")
	f.register(fs, &p)
	fs.IntVar(&p.Limit, "limit", 50, "at most this many jobs")
	fs.Int64Var(&p.AfterID, "after", 0, "the page after this id, in the list's order (the last id of the previous page)")
	fs.StringVar(&order, "order", "newest", "newest (highest id first, as the dashboard and the API list) or oldest")
	fs.BoolVar(&desc, "desc", false, "newest first")
	// Hidden rather than MarkDeprecated: cobra prints a deprecation to the command's out writer,
	// stdout, where it would come before -o json's output.
	_ = fs.MarkHidden("desc")
	return cmd
}

func statesList() string {
	names := make([]string, len(store.States))
	for i, s := range store.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func (a *app) printJobTable(rows []*rota.JobRow) {
	if len(rows) == 0 {
		fmt.Fprintln(a.stdout, "no jobs")
		return
	}
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tSTATE\tKIND\tQUEUE\tATTEMPT\tPRIORITY\tRUN AT\tLAST ERROR")
	for _, r := range rows {
		lastErr := ""
		if n := len(r.Errors); n > 0 {
			lastErr = oneLine(r.Errors[n-1].Error, 60)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", r.ID, r.State, r.Kind, r.Queue,
			r.Attempt, r.MaxAttempts, r.Priority, fmtTime(r.RunAt), orDash(lastErr))
	}
	tw.Flush()
}

// jobIDArg reads the single ID argument of a jobs subcommand.
func jobIDArg(args []string) (int64, error) {
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("job id %q: want a positive number", args[0])
	}
	return id, nil
}

// jobError words a store error about one job for the person who named it.
func (a *app) jobError(id int64, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("job %d not found in %s", id, a.storeName())
	case errors.Is(err, store.ErrJobRunning):
		return fmt.Errorf("job %d is running; cancel it or let it end first", id)
	}
	return err
}

func (a *app) jobsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show every field of a job, with the node, duration and outcome of each attempt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobIDArg(args)
			if err != nil {
				return err
			}
			return a.withClient(cmd, func(client *rota.Client) error {
				row, err := client.Get(cmd.Context(), id)
				if err != nil {
					return a.jobError(id, err)
				}
				if a.jsonOutput() {
					return a.printJSON(row)
				}
				a.printJob(row)
				return nil
			})
		},
	}
}

// printJob shows one job as aligned "Field: value" lines, then its args, result and attempts.
func (a *app) printJob(r *rota.JobRow) {
	tw := newTable(a.stdout)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field("ID", strconv.FormatInt(r.ID, 10))
	field("Kind", r.Kind)
	field("Queue", r.Queue)
	state := string(r.State)
	if r.CancelRequested && !r.State.Final() {
		state += " (cancel requested)"
	}
	field("State", state)
	field("Attempt", fmt.Sprintf("%d of %d", r.Attempt, r.MaxAttempts))
	field("Priority", strconv.Itoa(r.Priority))
	field("Run at", fmtTime(r.RunAt))
	field("Expires at", fmtTime(r.ExpiresAt))
	field("Created", fmtTime(r.CreatedAt))
	field("Attempted", fmtTime(r.AttemptedAt))
	field("Attempted by", orDash(r.AttemptedBy))
	field("Finalized", fmtTime(r.FinalizedAt))
	field("Owner", orDash(r.Owner))
	field("Lease until", fmtTime(r.LeaseUntil))
	field("Fence", strconv.FormatInt(r.Fence, 10))
	field("Unique key", orDash(r.UniqueKey))
	field("Tags", orDash(strings.Join(r.Tags, ", ")))
	tw.Flush()
	block := func(name string, raw []byte) {
		if len(raw) == 0 {
			fmt.Fprintf(a.stdout, "%s: -\n", name)
			return
		}
		fmt.Fprintf(a.stdout, "%s:\n  %s\n", name, prettyJSON(raw, "  "))
	}
	block("Args", r.Args)
	block("Metadata", r.Metadata)
	block("Result", r.Result)
	a.printAttempts(r, time.Now())
}

// printAttempts shows one line per attempt (see attempts.Of): its number, node, start, duration
// and how it ended, then the error and the stack of a failed one.
func (a *app) printAttempts(r *rota.JobRow, now time.Time) {
	list := attempts.Of(r, now)
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "Attempts: none")
		return
	}
	fmt.Fprintln(a.stdout, "Attempts:")
	for _, at := range list {
		name, node := fmt.Sprintf("attempt %d", at.Number), orDash(at.Node)
		if at.Number == 0 {
			name = "before any attempt"
		}
		line := fmt.Sprintf("  %s on %s, started %s, took %s", name, node, fmtTime(at.Started), attempts.Duration(at.Duration))
		switch {
		case at.Running:
			line = fmt.Sprintf("  %s running on %s for %s, since %s", name, node, attempts.Duration(at.Duration), fmtTime(at.Started))
		case at.Error != "":
			line += ": " + indentLines(at.Error, "    ")
		default:
			line += ": " + at.Outcome
		}
		fmt.Fprintln(a.stdout, line)
		if at.Trace != "" {
			fmt.Fprintf(a.stdout, "    %s\n", indentLines(strings.TrimSpace(at.Trace), "    "))
		}
	}
}

// indentLines indents every line of s after the first.
func indentLines(s, indent string) string {
	return strings.ReplaceAll(printable(s), "\n", "\n"+indent)
}

func (a *app) jobsCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job: at once if it waits, through its node if it runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobIDArg(args)
			if err != nil {
				return err
			}
			return a.withClient(cmd, func(client *rota.Client) error {
				before, err := client.Get(cmd.Context(), id)
				if err != nil {
					return a.jobError(id, err)
				}
				row, err := client.Cancel(cmd.Context(), id)
				if err != nil {
					return a.jobError(id, err)
				}
				if a.jsonOutput() {
					return a.printJSON(row)
				}
				switch {
				case before.State.Final():
					fmt.Fprintf(a.stdout, "job %d had already ended %s; nothing to cancel\n", id, row.State)
				case row.State == rota.StateRunning:
					fmt.Fprintf(a.stdout, "job %d is running: cancel requested; its node stops it within a heartbeat\n", id)
				default:
					fmt.Fprintf(a.stdout, "job %d cancelled\n", id)
				}
				return nil
			})
		},
	}
}

func (a *app) jobsRetryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Make a job that is not running available now, with one more attempt if it used them all",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobIDArg(args)
			if err != nil {
				return err
			}
			return a.withClient(cmd, func(client *rota.Client) error {
				row, err := client.Retry(cmd.Context(), id)
				if err != nil {
					return a.jobError(id, err)
				}
				if a.jsonOutput() {
					return a.printJSON(row)
				}
				fmt.Fprintf(a.stdout, "job %d is %s (attempt %d of %d used)\n", id, row.State, row.Attempt, row.MaxAttempts)
				return nil
			})
		},
	}
}

func (a *app) jobsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Remove a job that is not running, with its args, result and errors",
		Long: `Remove a job that is not running from the store, with its args, result and errors: for
a job that carries data that must not be kept, or one inserted in error. A running job is
refused; cancel it first. Finished jobs need no deleting: retention prunes them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobIDArg(args)
			if err != nil {
				return err
			}
			return a.withClient(cmd, func(client *rota.Client) error {
				if err := client.Delete(cmd.Context(), id); err != nil {
					return a.jobError(id, err)
				}
				if a.jsonOutput() {
					return a.printJSON(map[string]any{"id": id, "deleted": true})
				}
				fmt.Fprintf(a.stdout, "job %d deleted\n", id)
				return nil
			})
		},
	}
}
