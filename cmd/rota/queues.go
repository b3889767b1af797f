package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

func (a *app) queuesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their load, pause and resume them",
	}
	cmd.AddCommand(a.queuesListCmd(), a.queuePauseCmd(true), a.queuePauseCmd(false))
	return group(cmd)
}

// queueRow is one line of `queues list`, and its JSON.
type queueRow struct {
	store.QueueStats
	// OldestWait is how long the longest-waiting available job has waited, in seconds.
	OldestWait float64 `json:"oldest_wait_seconds"`
}

func (a *app) queuesListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Show every queue: jobs per state and how long the oldest available job has waited",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				stats, err := client.QueueStats(cmd.Context())
				if err != nil {
					return err
				}
				sort.Slice(stats, func(i, j int) bool { return stats[i].Queue < stats[j].Queue })
				now := time.Now()
				rows := make([]queueRow, len(stats))
				for i, s := range stats {
					rows[i] = queueRow{QueueStats: s}
					if !s.OldestAvailable.IsZero() {
						rows[i].OldestWait = now.Sub(s.OldestAvailable).Seconds()
					}
				}
				if a.jsonOutput() {
					return a.printJSON(rows)
				}
				if len(rows) == 0 {
					fmt.Fprintln(a.stdout, "no queues")
					return nil
				}
				tw := newTable(a.stdout)
				fmt.Fprintln(tw, "QUEUE\tSTATUS\tAVAILABLE\tRUNNING\tSCHEDULED\tRETRYABLE\tDISCARDED\tOLDEST WAIT")
				for _, r := range rows {
					status := "active"
					if r.Paused {
						status = "paused"
					}
					c := r.Counts
					wait := "-"
					if !r.OldestAvailable.IsZero() {
						wait = time.Duration(r.OldestWait * float64(time.Second)).Round(time.Second).String()
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Queue, status, c[store.StateAvailable], c[store.StateRunning],
						c[store.StateScheduled], c[store.StateRetryable], c[store.StateDiscarded], wait)
				}
				return tw.Flush()
			})
		},
	}
}

func (a *app) queuePauseCmd(pause bool) *cobra.Command {
	use, short := "resume QUEUE", "Let nodes claim jobs of a paused queue again"
	if pause {
		use, short = "pause QUEUE", "Stop every node from claiming jobs of a queue (running jobs go on)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				queue := args[0]
				var err error
				if pause {
					err = client.PauseQueue(cmd.Context(), queue)
				} else {
					err = client.ResumeQueue(cmd.Context(), queue)
				}
				if err != nil {
					return err
				}
				if a.jsonOutput() {
					return a.printJSON(map[string]any{"queue": queue, "paused": pause})
				}
				fmt.Fprintf(a.stdout, "queue %s %s\n", queue, map[bool]string{true: "paused", false: "resumed"}[pause])
				return nil
			})
		},
	}
}
