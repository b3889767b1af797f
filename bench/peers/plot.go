package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/rotahq/rota/bench"
)

// writePlots draws, into dir, what the results hold: drain throughput against the worker count
// (drain-workers.svg, from a -sweep run) and the insert→start distribution of each system's
// latency run (start-latency.svg). A plot with nothing to draw is not written.
func writePlots(dir string, results []bench.Result) ([]string, error) {
	var written []string
	for _, d := range []struct {
		name string
		draw func([]bench.Result) (*plot.Plot, bool, error)
	}{{"drain-workers.svg", drainByWorkers}, {"start-latency.svg", startLatency}} {
		p, ok, err := d.draw(results)
		if err != nil {
			return written, err
		}
		if !ok {
			continue
		}
		name := filepath.Join(dir, d.name)
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, name); err != nil {
			return written, err
		}
		written = append(written, name)
	}
	return written, nil
}

// drainByWorkers is one line per system: jobs/s of its drains against their worker counts.
func drainByWorkers(results []bench.Result) (*plot.Plot, bool, error) {
	lines := map[string]plotter.XYs{}
	for _, r := range results {
		if r.Workload == bench.Drain && r.Err == "" && r.Workers > 0 && r.JobsPerSec > 0 {
			lines[r.System] = append(lines[r.System], plotter.XY{X: float64(r.Workers), Y: r.JobsPerSec})
		}
	}
	if !anyLine(lines, 2) {
		return nil, false, nil
	}
	p := plot.New()
	p.Title.Text = "Drain of queued no-op jobs"
	p.X.Label.Text = "workers"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = workerTicks(lines)
	p.Y.Label.Text = "jobs/s"
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for i, name := range sortedNames(lines) {
		xys := lines[name]
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, false, err
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	return p, true, nil
}

// startLatency is one line per system: the share of jobs that had started within x of their
// insert returning, x on a log scale so that the tail shows as well as the middle.
func startLatency(results []bench.Result) (*plot.Plot, bool, error) {
	lines := map[string]plotter.XYs{}
	for _, r := range results {
		if r.Workload != bench.Latency || r.Err != "" || r.Latency == nil || len(r.Latency.Dist) == 0 {
			continue
		}
		dist := r.Latency.Dist
		xys := make(plotter.XYs, 0, len(dist))
		for i, d := range dist {
			// A log axis has no zero: a job that started before its insert returned is drawn
			// at the axis' left end.
			xys = append(xys, plotter.XY{X: max(ms(d), latencyAxisMin), Y: float64(i+1) / float64(len(dist))})
		}
		lines[r.System] = xys
	}
	if !anyLine(lines, 1) {
		return nil, false, nil
	}
	p := plot.New()
	p.Title.Text = "Insert → start, one job at a time at a steady rate"
	p.X.Label.Text = "ms from the insert returning to the handler starting"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min = latencyAxisMin
	p.Y.Label.Text = "share of jobs started"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for i, name := range sortedNames(lines) {
		l, err := plotter.NewLine(lines[name])
		if err != nil {
			return nil, false, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		if i >= 7 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
	}
	return p, true, nil
}

// latencyAxisMin is the left end of the latency axis, in ms.
const latencyAxisMin = 0.01

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// anyLine reports whether some line has at least n points.
func anyLine(lines map[string]plotter.XYs, n int) bool {
	for _, xys := range lines {
		if len(xys) >= n {
			return true
		}
	}
	return false
}

// sortedNames orders the lines rota first, so rota's colours stay put from plot to plot.
func sortedNames(lines map[string]plotter.XYs) []string {
	names := make([]string, 0, len(lines))
	for name := range lines {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := len(a) >= 4 && a[:4] == "rota", len(b) >= 4 && b[:4] == "rota"
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	return names
}

// workerTicks labels the worker counts that were measured.
func workerTicks(lines map[string]plotter.XYs) plot.Ticker {
	seen := map[float64]bool{}
	var ticks plot.ConstantTicks
	for _, xys := range lines {
		for _, xy := range xys {
			if !seen[xy.X] {
				seen[xy.X] = true
				ticks = append(ticks, plot.Tick{Value: xy.X, Label: fmt.Sprint(xy.X)})
			}
		}
	}
	slices.SortFunc(ticks, func(a, b plot.Tick) int { return cmp.Compare(a.Value, b.Value) })
	return ticks
}
