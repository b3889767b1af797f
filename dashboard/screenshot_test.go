package dashboard

import (
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/browsertest"
	"github.com/rotahq/rota/store"
)

// screenshots names the directory TestFleetOverviewInABrowser writes its pictures of the overview,
// a failed job and a workflow to, for the docs:
// go test ./dashboard -run FleetOverview -args -screenshots ../docs/img
var screenshots = flag.String("screenshots", "", "write the pages' screenshots to this directory")

// The overview draws the fleet's last hour from every node's counts: three nodes' rows, summed,
// in the chart and in the tables by queue and by kind. Then a failed job's page and a workflow's,
// as the docs show them.
func TestFleetOverviewInABrowser(t *testing.T) {
	s := newSite(t)
	ctx := browsertest.Context(t)
	keeper := s.client.Store().(store.StatsKeeper)
	now := time.Now().UTC().Truncate(time.Minute)
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []store.Stats
	var mailed int64
	// 59 minutes, not 60: should the minute turn before the page is read, the oldest row stays
	// in the window and the sums below still hold.
	for m := 58; m >= 0; m-- {
		for _, node := range []string{"web-1", "web-2", "batch-1"} {
			for _, qk := range [][2]string{{"mail", "welcome"}, {"mail", "digest"}, {"billing", "invoice"}} {
				if node == "batch-1" && qk[0] == "mail" {
					continue
				}
				r := store.Stats{Node: node, Minute: now.Add(-time.Duration(m) * time.Minute), Queue: qk[0], Kind: qk[1],
					Completed: 200 + rng.Int64N(400), Failed: rng.Int64N(12), Discarded: rng.Int64N(2)}
				if m > 20 && m < 26 { // an incident: failures and cancellations for five minutes
					r.Failed += 150
					r.Cancelled = rng.Int64N(30)
				}
				r.Latency, r.Duration = spread(rng, r.Completed+r.Failed, 1, 4), spread(rng, r.Completed+r.Failed, 5, 9)
				if qk[0] == "mail" {
					mailed += r.Completed
				}
				rows = append(rows, r)
			}
		}
	}
	if err := keeper.AddStats(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	seedFleet(t, s)
	step(t, ctx, "sign in",
		chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.ID("throughput")))
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#throughput g")].map(g => g.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#throughput text.axis")].map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != 60 {
		t.Fatalf("the chart has %d bars, want one a minute for an hour", len(bars))
	}
	if len(labels) < 6 || labels[0] != "0" {
		t.Fatalf("the chart's axis labels are %q, want counts from 0 and times", labels)
	}
	mail := strings.Fields(text(t, ctx, chromedp.CSS(`#by-queue tr[data-name="mail"]`)))
	if len(mail) < 2 || mail[1] != itoa(mailed) {
		t.Fatalf("the table by queue reads %q for mail, want %d completed", mail, mailed)
	}
	shoot(t, ctx, "dashboard-overview.png")

	// A failed job's page: its attempts, with the node that ran each and the error.
	failed, err := s.client.Insert(context.Background(), boomArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.await(t, rota.EventJobFailed)
	step(t, ctx, "open the failed job",
		chromedp.Navigate(s.url+"/jobs/"+itoa(failed.Job.ID)), chromedp.WaitVisible(chromedp.CSS("#attempts td.node")))
	if row := text(t, ctx, chromedp.ID("attempts")); !strings.Contains(row, "disk on fire") || !strings.Contains(row, "node-1") {
		t.Fatalf("the failed job's attempts read %q", row)
	}
	shoot(t, ctx, "dashboard-job.png")

	// A workflow's page: its graph, a box per step.
	wf := rota.NewWorkflow()
	parked := &rota.InsertOpts{Queue: "parked"} // no node serves it: the steps stay as inserted
	wf.Add("fetch-a", okArgs{}, parked)
	wf.Add("fetch-b", okArgs{}, parked)
	wf.Add("merge", okArgs{}, parked).After("fetch-a", "fetch-b")
	wf.Add("mail", okArgs{}, parked).After("merge")
	res, err := s.client.InsertWorkflow(context.Background(), wf)
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "open the workflow",
		chromedp.Navigate(s.url+"/workflows/"+res.ID), chromedp.WaitVisible(chromedp.ID("graph")))
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#graph .box").length`))
	if err != nil || boxes != 4 {
		t.Fatalf("the graph has %d boxes (%v), want one per step", boxes, err)
	}
	shoot(t, ctx, "dashboard-workflow.png")
}

// shoot writes a screenshot of the page to the -screenshots directory, if one was named.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1200, 900)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedFleet makes the overview look like the fleet whose counts the chart shows: three more nodes
// serving mail and billing, web-1 leading, and jobs waiting in both queues for later.
func seedFleet(t *testing.T, s *site) {
	t.Helper()
	ctx := context.Background()
	st := s.client.Store()
	for _, n := range []store.NodeInfo{
		{ID: "web-1", Host: "web-1.internal", PID: 4121, Queues: []string{"mail", "billing"}, Kinds: []string{"welcome", "digest", "invoice"}},
		{ID: "web-2", Host: "web-2.internal", PID: 3977, Queues: []string{"mail", "billing"}, Kinds: []string{"welcome", "digest", "invoice"}},
		{ID: "batch-1", Host: "batch-1.internal", PID: 812, Queues: []string{"billing"}, Kinds: []string{"invoice"}},
	} {
		n.Version, n.StartedAt, n.RegisterEvery = "v1.4.2", time.Now().Add(-3*time.Hour), time.Hour
		if err := st.(store.NodeRegistry).RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.(store.Leaser).AcquireLease(ctx, "rota.leader", "web-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	for i, kind := range []string{"welcome", "welcome", "digest", "invoice", "invoice", "invoice"} {
		queue := "mail"
		if kind == "invoice" {
			queue = "billing"
		}
		if _, err := s.client.Insert(ctx, rota.RawArgs{KindName: kind, JSON: []byte(`{}`)},
			&rota.InsertOpts{Queue: queue, RunAt: time.Now().Add(time.Duration(i+1) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
}

// spread is a histogram of n values over the buckets from lo to hi, most of them in the middle.
func spread(rng *rand.Rand, n int64, lo, hi int) []int64 {
	h := make([]int64, len(store.StatsBuckets)+1)
	for range n {
		h[min(lo+rng.IntN(hi-lo+1), lo+rng.IntN(hi-lo+1))]++
	}
	return h
}
