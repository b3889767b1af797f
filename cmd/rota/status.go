package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
)

// statusView is what `rota status` shows, and its JSON.
type statusView struct {
	Store    string             `json:"store"`
	Leader   *rota.LeaderStatus `json:"leader"`
	Nodes    []rota.NodeStatus  `json:"nodes"`
	Warnings []rota.Warning     `json:"warnings"`
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the nodes serving the store and which of them leads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				st, err := client.Status(cmd.Context())
				if errors.Is(err, rota.ErrNoRegistry) {
					return fmt.Errorf("%s keeps no node registry or leases", a.storeName())
				}
				if err != nil {
					return err
				}
				view := statusView{Store: a.storeName(), Leader: st.Leader, Nodes: st.Nodes, Warnings: st.Warnings}
				if a.jsonOutput() {
					return a.printJSON(view)
				}
				a.printStatus(view, st.Now)
				return nil
			})
		},
	}
}

func (a *app) printStatus(v statusView, now time.Time) {
	fmt.Fprintf(a.stdout, "Store:  %s\n", v.Store)
	switch {
	case v.Leader == nil || !v.Leader.Held:
		fmt.Fprintln(a.stdout, "Leader: none")
	default:
		l := v.Leader
		fmt.Fprintf(a.stdout, "Leader: %s (token %d, leading for %s, lease expires in %s)\n", l.Owner, l.Token,
			age(now.Sub(l.AcquiredAt)), age(l.ExpiresAt.Sub(now)))
	}
	defer func() {
		for _, w := range v.Warnings {
			fmt.Fprintf(a.stdout, "Warning: %s\n", w.Message)
		}
	}()
	if len(v.Nodes) == 0 {
		fmt.Fprintln(a.stdout, "Nodes:  none")
		return
	}
	fmt.Fprintf(a.stdout, "Nodes:  %d\n", len(v.Nodes))
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tHOST\tPID\tVERSION\tQUEUES\tRUNNING\tUP\tLAST SEEN")
	for _, n := range v.Nodes {
		up := age(now.Sub(n.StartedAt))
		if n.Stale {
			up = "stale" // not seen for two registrations: dead, or cut off from the store
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s ago\n", n.ID, n.Host, n.PID, n.Version, strings.Join(n.Queues, ","),
			n.Running, up, age(now.Sub(n.LastSeen)))
	}
	tw.Flush()
}

// age shows a duration to the second, the precision a person reading status needs.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}
