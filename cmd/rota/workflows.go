package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/httpapi"
	"github.com/rotahq/rota/store"
)

func (a *app) workflowsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "Insert, list, show, cancel and retry workflows and batches",
		Long: `A workflow is a graph of jobs inserted at once: named steps, each of which may wait for
others. A batch is a workflow whose callback step waits for all its jobs; these commands show
and steer both.`,
	}
	cmd.AddCommand(a.workflowsListCmd(), a.workflowsShowCmd(), a.workflowsCancelCmd(), a.workflowsRetryCmd(),
		a.workflowsInsertCmd())
	return group(cmd)
}

// workflowView is a workflow as the commands print it in JSON, as the HTTP API answers: its
// counts with the status they sum up to, and with show, every step.
type workflowView struct {
	ID        string               `json:"id"`
	Status    string               `json:"status"`
	Counts    map[rota.State]int64 `json:"counts"`
	CreatedAt time.Time            `json:"created_at"`
	Steps     []*rota.JobRow       `json:"steps,omitempty"`
}

func viewOf(s rota.WorkflowStats, steps []*rota.JobRow) workflowView {
	return workflowView{ID: s.ID, Status: rota.WorkflowStatus(s.Counts), Counts: s.Counts, CreatedAt: s.CreatedAt, Steps: steps}
}

// workflowError words a store error about one workflow for the person who named it.
func (a *app) workflowError(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("workflow %s not found in %s", id, a.storeName())
	}
	return err
}

func (a *app) workflowsListCmd() *cobra.Command {
	var p rota.WorkflowListParams
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List workflows and batches, newest first, with their steps per state",
		Example: `  rota workflows list
  rota workflows list --limit 20 --before w0193a5c2e0a1f3c2b1d4e5
  rota workflows list -o json | jq -r '.[] | select(.status == "failed") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if p.Limit < 1 {
				return fmt.Errorf("--limit %d: must be at least 1", p.Limit)
			}
			return a.withClient(cmd, func(client *rota.Client) error {
				stats, err := client.Workflows(cmd.Context(), p)
				if err != nil {
					return err
				}
				views := make([]workflowView, len(stats))
				for i, s := range stats {
					views[i] = viewOf(s, nil)
				}
				if a.jsonOutput() {
					return a.printJSON(views)
				}
				if len(views) == 0 {
					fmt.Fprintln(a.stdout, "no workflows")
					return nil
				}
				tw := newTable(a.stdout)
				fmt.Fprintln(tw, "ID\tSTATUS\tSTEPS\tBY STATE\tCREATED")
				for _, v := range views {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", v.ID, v.Status, total(v.Counts), fmtCounts(v.Counts), fmtTime(v.CreatedAt))
				}
				tw.Flush()
				if len(views) == p.Limit {
					fmt.Fprintf(a.stderr, "more workflows may follow: add --before %s\n", views[len(views)-1].ID)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.Before, "before", "", "the page after this workflow id (the last id of the previous page)")
	f.IntVar(&p.Limit, "limit", 50, "at most this many workflows")
	return cmd
}

func total(counts map[rota.State]int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// fmtCounts shows the states a workflow's steps are in, in the order of store.States, leaving
// out those none is in: "2 completed, 1 running, 3 pending" reads at a glance where a column per
// state would be mostly zeros.
func fmtCounts(counts map[rota.State]int64) string {
	var parts []string
	for _, s := range store.States {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return orDash(strings.Join(parts, ", "))
}

func (a *app) workflowsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a workflow's status and every step: its job, state, the steps it waits for, its last error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return a.withClient(cmd, func(client *rota.Client) error {
				info, err := client.Workflow(cmd.Context(), id)
				if err != nil {
					return a.workflowError(id, err)
				}
				v := viewOf(info.WorkflowStats, info.Steps)
				if a.jsonOutput() {
					return a.printJSON(v)
				}
				a.printWorkflow(v)
				return nil
			})
		},
	}
}

// waitsForShown bounds the step names a cell of `workflows show` lists: a batch's callback
// waits for every job of the batch.
const waitsForShown = 3

func (a *app) printWorkflow(v workflowView) {
	tw := newTable(a.stdout)
	fmt.Fprintf(tw, "Workflow:\t%s\n", v.ID)
	fmt.Fprintf(tw, "Status:\t%s\n", v.Status)
	fmt.Fprintf(tw, "Steps:\t%d (%s)\n", total(v.Counts), fmtCounts(v.Counts))
	fmt.Fprintf(tw, "Created:\t%s\n", fmtTime(v.CreatedAt))
	tw.Flush()
	fmt.Fprintln(a.stdout)
	names := make(map[int64]string, len(v.Steps))
	for _, s := range v.Steps {
		names[s.ID] = s.Step
	}
	tw = newTable(a.stdout)
	fmt.Fprintln(tw, "STEP\tJOB\tKIND\tSTATE\tWAITS FOR\tATTEMPT\tLAST ERROR")
	for _, s := range v.Steps {
		state := string(s.State)
		if s.CancelRequested && !s.State.Final() {
			state += " (cancel requested)"
		}
		lastErr := ""
		if n := len(s.Errors); n > 0 {
			lastErr = oneLine(s.Errors[n-1].Error, 60)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d/%d\t%s\n", s.Step, s.ID, s.Kind, state, waitsFor(s, names),
			s.Attempt, s.MaxAttempts, orDash(lastErr))
	}
	tw.Flush()
}

// waitsFor names the steps s waits (or waited) for, a job outside the workflow by its id.
func waitsFor(s *rota.JobRow, names map[int64]string) string {
	var out []string
	for i, id := range s.DependsOn {
		if i == waitsForShown {
			out = append(out, fmt.Sprintf("and %d more", len(s.DependsOn)-i))
			break
		}
		if name, ok := names[id]; ok {
			out = append(out, name)
		} else {
			out = append(out, "job "+strconv.FormatInt(id, 10))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	w := strings.Join(out, ", ")
	if s.IgnoreFailedDeps {
		w += " (however they end)"
	}
	return w
}

// workflowChange is what cancel and retry print in JSON, as the HTTP API answers them: the
// steps they changed, and the workflow as they left it.
type workflowChange struct {
	Workflow workflowView   `json:"workflow"`
	Changed  []*rota.JobRow `json:"changed"`
}

func (a *app) workflowsCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel every step that has not ended: waiting ones at once, running ones through their node",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.changeWorkflow(cmd, args[0], (*rota.Client).CancelWorkflow, func(v workflowView, changed []*rota.JobRow) string {
				if len(changed) == 0 {
					return fmt.Sprintf("workflow %s had already ended %s; nothing to cancel", v.ID, v.Status)
				}
				var cancelled, running int
				for _, s := range changed {
					if s.State == rota.StateRunning {
						running++
					} else {
						cancelled++
					}
				}
				msg := fmt.Sprintf("workflow %s: %s cancelled", v.ID, plural(cancelled, "step"))
				if running > 0 {
					msg += fmt.Sprintf("; %s running: cancel requested, their nodes stop them within a heartbeat", plural(running, "step"))
				}
				return msg
			})
		},
	}
}

func (a *app) workflowsRetryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Run the failed steps again, in order: the first now, those after them once they complete",
		Long: `Run the steps of a workflow that ended discarded, cancelled or expired again, in order: each
waits again for those of its dependencies that have not completed, and runs now when it waits
for none. Completed, running and waiting steps are left as they are; a step whose attempts are
used up gets one more.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.changeWorkflow(cmd, args[0], (*rota.Client).RetryWorkflow, func(v workflowView, changed []*rota.JobRow) string {
				if len(changed) == 0 {
					return fmt.Sprintf("workflow %s has no failed steps (it is %s); nothing to retry", v.ID, v.Status)
				}
				names := make([]string, len(changed))
				for i, s := range changed {
					names[i] = s.Step
				}
				return fmt.Sprintf("workflow %s: %s to run again: %s", v.ID, plural(len(changed), "step"), strings.Join(names, ", "))
			})
		},
	}
}

// changeWorkflow applies change to workflow id and answers with the workflow as it now is and
// the steps change returned: as JSON, or as the line say makes of them.
func (a *app) changeWorkflow(cmd *cobra.Command, id string,
	change func(*rota.Client, context.Context, string) ([]*rota.JobRow, error),
	say func(v workflowView, changed []*rota.JobRow) string) error {
	return a.withClient(cmd, func(client *rota.Client) error {
		changed, err := change(client, cmd.Context(), id)
		if err != nil {
			return a.workflowError(id, err)
		}
		info, err := client.Workflow(cmd.Context(), id)
		if err != nil {
			return a.workflowError(id, err)
		}
		v := viewOf(info.WorkflowStats, info.Steps)
		if a.jsonOutput() {
			return a.printJSON(workflowChange{Workflow: v, Changed: orEmpty(changed)})
		}
		_, err = fmt.Fprintln(a.stdout, say(v, changed))
		return err
	})
}

func orEmpty(rows []*rota.JobRow) []*rota.JobRow {
	if rows == nil {
		return []*rota.JobRow{}
	}
	return rows
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (a *app) workflowsInsertCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "insert --file FILE",
		Short: "Insert a workflow described in JSON, all steps or none, and print its id",
		Long: `Insert a workflow from a JSON document, the one POST /v1/workflows takes:

  {"steps": [
    {"name": "fetch-a", "kind": "exec", "args": {"program": "fetch", "args": ["a"]}},
    {"name": "fetch-b", "kind": "exec", "args": {"program": "fetch", "args": ["b"]}},
    {"name": "merge", "kind": "exec", "args": {"program": "merge"}, "after": ["fetch-a", "fetch-b"]},
    {"name": "report", "kind": "http", "args": {"url": "https://example.com/done"},
     "after": ["merge"], "ignore_failed_deps": true}
  ]}

A step runs once every step it names in "after" has completed; when one of them fails, it ends
cancelled, unless "ignore_failed_deps" makes it run however they ended. Each step takes the
options of a job: queue, priority, max_attempts, run_at or delay, expires_at, unique_key,
supersede, tags, metadata. The command prints the workflow's id; -o json prints each step's job too.`,
		Example: `  rota workflows insert --file nightly.json
  generate-steps | rota workflows insert --file -
  rota workflows show "$(rota workflows insert --file nightly.json)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("insert needs the workflow's JSON document: --file FILE, or --file - for the standard input")
			}
			data, err := a.readInput("--file", file, file)
			if err != nil {
				return err
			}
			wf, err := httpapi.ParseWorkflow(data)
			if err != nil {
				name := file
				if file == "-" {
					name = "the standard input"
				}
				var syn *json.SyntaxError
				if errors.As(err, &syn) {
					line, col := position(string(data), syn.Offset)
					return fmt.Errorf("%s is not valid JSON: %v at line %d, column %d", name, err, line, col)
				}
				return fmt.Errorf("%s: %w", name, err)
			}
			// The first command to use a store may be this one, as with enqueue.
			return a.withClientCreating(cmd, func(client *rota.Client) error {
				res, err := client.InsertWorkflow(cmd.Context(), wf)
				if err != nil {
					return err
				}
				if a.jsonOutput() {
					return a.printJSON(map[string]any{"id": res.ID, "steps": res.Steps})
				}
				fmt.Fprintln(a.stdout, res.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the workflow's JSON document, or - for the standard input")
	return cmd
}
