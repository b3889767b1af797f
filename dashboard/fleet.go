package dashboard

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/rotahq/rota"
)

// fleetWindow is how far back the overview's chart and tables look.
const fleetWindow = time.Hour

// The chart of attempts per minute, in SVG units: a plot area of chartW × chartH, with room on
// the left for the counts' axis and below for the times'.
const (
	chartLeft = 44
	chartTop  = 8
	chartW    = 600
	chartH    = 120
	// chartViewW and chartViewH are the whole picture.
	chartViewW = chartLeft + chartW + 8
	chartViewH = chartTop + chartH + 22
)

// fleetChart is the chart laid out: one stacked bar per minute, gridlines with counts on the
// left, a time every ten minutes below.
type fleetChart struct {
	Bars      []fleetBar
	YTicks    []tick
	XTicks    []tick
	Peak      int64
	Total     int64
	ViewW     int
	ViewH     int
	PlotLeft  int
	PlotRight int
	PlotTop   int
	PlotBase  int
}

// fleetBar is a minute's bar: one segment per outcome, bottom to top.
type fleetBar struct {
	X, W  int
	Segs  []segment
	Title string
}

type segment struct {
	Class string
	Y, H  int
}

type tick struct {
	Pos   int
	Label string
}

// outcomeClasses are the outcomes in the order the bars stack them, as their CSS classes and
// the legend name them.
var outcomeClasses = []string{"completed", "failed", "discarded", "cancelled"}

// part is the part of the fleet the overview shows, for the chart's title and the tables' links.
type part struct {
	Name  string // "queue mail", "kind welcome in queue mail"; "" for the whole fleet
	Queue string
	Kind  string
}

// fleetPart names the part of the fleet f keeps.
func fleetPart(f rota.FleetFilter) part {
	p := part{Queue: f.Queue, Kind: f.Kind}
	switch {
	case f.Queue != "" && f.Kind != "":
		p.Name = "kind " + f.Kind + " in queue " + f.Queue
	case f.Queue != "":
		p.Name = "queue " + f.Queue
	case f.Kind != "":
		p.Name = "kind " + f.Kind
	}
	return p
}

// partLink is the overview narrowed to the queue or kind (key) name, within the part p shows:
// a kind's link on a queue's overview keeps the queue.
func partLink(p part, key, name string) string {
	q := url.Values{}
	if p.Queue != "" {
		q.Set("queue", p.Queue)
	}
	if p.Kind != "" {
		q.Set("kind", p.Kind)
	}
	q.Set(key, name)
	return "/?" + q.Encode()
}

func layoutFleet(minutes []rota.FleetMinute) fleetChart {
	c := fleetChart{ViewW: chartViewW, ViewH: chartViewH, PlotLeft: chartLeft, PlotRight: chartLeft + chartW,
		PlotTop: chartTop, PlotBase: chartTop + chartH}
	for _, m := range minutes {
		sum := m.Completed + m.Failed + m.Discarded + m.Cancelled
		c.Peak = max(c.Peak, sum)
		c.Total += sum
	}
	top := niceCeil(c.Peak)
	n := len(minutes)
	if n == 0 {
		return c
	}
	slot := chartW / n
	for i, m := range minutes {
		b := fleetBar{X: chartLeft + i*slot + 1, W: max(slot-2, 1),
			Title: fmt.Sprintf("%s UTC: %d completed, %d failed, %d discarded, %d cancelled",
				m.At.UTC().Format("15:04"), m.Completed, m.Failed, m.Discarded, m.Cancelled)}
		y := chartTop + chartH
		for k, v := range []int64{m.Completed, m.Failed, m.Discarded, m.Cancelled} {
			if v == 0 {
				continue
			}
			h := max(int(v*chartH/top), 1)
			y -= h
			b.Segs = append(b.Segs, segment{Class: outcomeClasses[k], Y: y, H: h})
		}
		c.Bars = append(c.Bars, b)
		if m.At.Minute()%10 == 0 {
			c.XTicks = append(c.XTicks, tick{Pos: chartLeft + i*slot + slot/2, Label: m.At.UTC().Format("15:04")})
		}
	}
	for _, v := range []int64{0, top / 2, top} {
		c.YTicks = append(c.YTicks, tick{Pos: chartTop + chartH - int(v*chartH/top), Label: strconv.FormatInt(v, 10)})
	}
	return c
}

// niceCeil is the axis' top: at least 2 (so that half of it is a whole number), and 2, 5 or 10
// times a power of ten at or above peak.
func niceCeil(peak int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{2, 5, 10} {
			if m*p >= peak {
				return m * p
			}
		}
	}
}

// ms shows a percentile in milliseconds, or a dash where nothing was counted.
func ms(p rota.Percentiles, d time.Duration) string {
	if p.Count == 0 {
		return "–"
	}
	switch {
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	case d < 10*time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	default:
		return d.Round(time.Second).String()
	}
}
