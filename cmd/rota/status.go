package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
)

// statusView is what `rota status` shows, and its JSON.
type statusView struct {
	Store  string           `json:"store"`
	Leader *leaderView      `json:"leader"`
	Nodes  []store.NodeInfo `json:"nodes"`
}

type leaderView struct {
	store.Lease
	// Held is false when the lease expired and no node renewed it: nobody leads.
	Held bool `json:"held"`
	// AgeSeconds is how long the current holder has held the lease.
	AgeSeconds float64 `json:"age_seconds"`
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the nodes serving the store and which of them leads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(client *rota.Client) error {
				ctx := cmd.Context()
				st := client.Store()
				reg, okReg := st.(store.NodeRegistry)
				leaser, okLease := st.(store.Leaser)
				if !okReg || !okLease {
					return fmt.Errorf("%s keeps no node registry or leases", a.storeName())
				}
				now, err := reg.Now(ctx)
				if err != nil {
					return err
				}
				view := statusView{Store: a.storeName()}
				if view.Nodes, err = reg.ListNodes(ctx); err != nil {
					return err
				}
				lease, err := leaser.GetLease(ctx, leader.NameDefault)
				switch {
				case errors.Is(err, store.ErrNotFound):
				case err != nil:
					return err
				default:
					held := lease.Owner != "" && !lease.ExpiresAt.Before(now)
					view.Leader = &leaderView{Lease: lease, Held: held, AgeSeconds: now.Sub(lease.AcquiredAt).Seconds()}
				}
				if a.jsonOutput() {
					if view.Nodes == nil {
						view.Nodes = []store.NodeInfo{}
					}
					return a.printJSON(view)
				}
				a.printStatus(view, now)
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
	if len(v.Nodes) == 0 {
		fmt.Fprintln(a.stdout, "Nodes:  none")
		return
	}
	fmt.Fprintf(a.stdout, "Nodes:  %d\n", len(v.Nodes))
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tHOST\tPID\tVERSION\tQUEUES\tUP\tLAST SEEN")
	for _, n := range v.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s ago\n", n.ID, n.Host, n.PID, n.Version, strings.Join(n.Queues, ","),
			age(now.Sub(n.StartedAt)), age(now.Sub(n.LastSeen)))
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
