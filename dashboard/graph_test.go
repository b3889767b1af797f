package dashboard

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

func jobStep(id int64, name string, state store.State, deps ...int64) *store.JobRow {
	return &store.JobRow{ID: id, Kind: "k", Step: name, State: state, Workflow: "w1", DependsOn: deps, MaxAttempts: 1}
}

// diamond is a → b, a → c, b and c → d, and e on its own waiting for a job outside the
// workflow.
func diamond() []*store.JobRow {
	return []*store.JobRow{
		jobStep(1, "a", store.StateCompleted),
		jobStep(2, "b", store.StateCompleted, 1),
		jobStep(3, "c", store.StateDiscarded, 1),
		jobStep(4, "d", store.StateCancelled, 2, 3, 2),
		jobStep(5, "e", store.StatePending, 999),
	}
}

func nodeByStep(t *testing.T, g *graph, name string) graphNode {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Step == name {
			return n
		}
	}
	t.Fatalf("no box for step %s", name)
	return graphNode{}
}

// A step's layer is one more than the deepest step it waits for; layers go down the page, and
// a layer's steps keep their order, centred on the widest row.
func TestLayoutLayers(t *testing.T) {
	g := layout(diamond())
	want := map[string]int{"a": 0, "b": 1, "c": 1, "d": 2, "e": 0}
	for name, layer := range want {
		if n := nodeByStep(t, g, name); n.Layer != layer {
			t.Errorf("step %s on layer %d, want %d", name, n.Layer, layer)
		}
	}
	a, b, c, d, e := nodeByStep(t, g, "a"), nodeByStep(t, g, "b"), nodeByStep(t, g, "c"), nodeByStep(t, g, "d"), nodeByStep(t, g, "e")
	if a.Y != e.Y || b.Y != c.Y || !(a.Y < b.Y && b.Y < d.Y) {
		t.Errorf("rows: a %d, e %d, b %d, c %d, d %d", a.Y, e.Y, b.Y, c.Y, d.Y)
	}
	if !(a.X < e.X && b.X < c.X) {
		t.Errorf("a layer's order is not the steps' order: a %d e %d, b %d c %d", a.X, e.X, b.X, c.X)
	}
	if d.CX != g.Width/2 || d.X+d.W/2 != d.CX {
		t.Errorf("the lone box of the last layer is not centred: middle %d in a width of %d", d.CX, g.Width)
	}
	if g.Width != 2*boxW+gapX+2*pad || g.Height != 3*boxH+2*gapY+2*pad {
		t.Errorf("size %dx%d", g.Width, g.Height)
	}
	for _, n := range g.Nodes {
		if n.X < 0 || n.Y < 0 || n.X+n.W > g.Width || n.Y+n.H > g.Height {
			t.Errorf("box %s at (%d,%d) is outside %dx%d", n.Step, n.X, n.Y, g.Width, g.Height)
		}
	}
}

// An edge runs from the bottom middle of each step waited for to the top middle of the step
// that waits, once however often it is named; jobs outside the workflow have none.
func TestLayoutEdges(t *testing.T) {
	g := layout(diamond())
	var got []string
	for _, e := range g.Edges {
		got = append(got, itoa(e.From)+"→"+itoa(e.To))
		from, to := g.Nodes[e.From-1], g.Nodes[e.To-1]
		if e.X1 != from.CX || e.Y1 != from.Y+from.H || e.X2 != to.CX || e.Y2 != to.Y {
			t.Errorf("edge %d→%d runs (%d,%d)→(%d,%d)", e.From, e.To, e.X1, e.Y1, e.X2, e.Y2)
		}
		if !(e.Y1 < e.CY1 && e.CY2 < e.Y2) || e.FromState != from.State {
			t.Errorf("edge %d→%d: control points %d, %d; from state %s", e.From, e.To, e.CY1, e.CY2, e.FromState)
		}
	}
	if want := []string{"1→2", "1→3", "2→4", "3→4"}; !slices.Equal(got, want) {
		t.Errorf("edges %v, want %v", got, want)
	}
}

// A batch: the callback waits for every job, including those added after it (greater ids);
// its twenty jobs wrap onto rows of rowMax, closer to each other than layers are, and the
// callback comes below them all.
func TestLayoutWrapsWideLayers(t *testing.T) {
	var steps []*store.JobRow
	var deps []int64
	for i := int64(1); i <= 20; i++ {
		id := i
		if i > 10 {
			id++ // jobs 11-20 were added to the open batch after its callback, job 11
		}
		steps = append(steps, jobStep(id, "job-"+itoa(i), store.StateCompleted))
		deps = append(deps, id)
	}
	steps = slices.Insert(steps, 10, jobStep(11, rota.BatchCallbackStep, store.StateAvailable, deps...))
	g := layout(steps)
	cb := nodeByStep(t, g, rota.BatchCallbackStep)
	if cb.Layer != 1 || len(g.Edges) != 20 {
		t.Fatalf("callback on layer %d with %d edges", cb.Layer, len(g.Edges))
	}
	if g.Width != rowMax*boxW+(rowMax-1)*gapX+2*pad {
		t.Errorf("width %d for rows of %d", g.Width, rowMax)
	}
	rows := map[int]int{}
	for _, n := range g.Nodes {
		if n.Step != rota.BatchCallbackStep {
			rows[n.Y]++
			if n.Y >= cb.Y {
				t.Errorf("%s (y %d) is not above the callback (y %d)", n.Step, n.Y, cb.Y)
			}
		}
	}
	if want := (20 + rowMax - 1) / rowMax; len(rows) != want {
		t.Errorf("20 jobs on %d rows (%v), want %d", len(rows), rows, want)
	}
	first, second := nodeByStep(t, g, "job-1"), nodeByStep(t, g, "job-"+itoa(rowMax+1))
	if second.Y-first.Y != boxH+gapWrap || g.Height != cb.Y+boxH+pad || cb.Y-(boxH+gapY) < second.Y {
		t.Errorf("rows at %d and %d, callback at %d, height %d", first.Y, second.Y, cb.Y, g.Height)
	}
}

// Steps caught in a cycle, which no insert makes, are still drawn.
func TestLayoutCycle(t *testing.T) {
	g := layout([]*store.JobRow{jobStep(1, "x", store.StatePending, 2), jobStep(2, "y", store.StatePending, 1), jobStep(3, "z", store.StateAvailable)})
	if len(g.Nodes) != 3 || nodeByStep(t, g, "x").Layer != 1 || nodeByStep(t, g, "z").Layer != 0 {
		t.Fatalf("nodes %+v", g.Nodes)
	}
	if layout(nil) != nil {
		t.Fatal("a graph of no steps")
	}
}

func TestLabel(t *testing.T) {
	if got := label("short"); got != "short" {
		t.Errorf("label(short) = %q", got)
	}
	long := strings.Repeat("é", 30)
	if got := label(long); len([]rune(got)) != labelMax || !strings.HasSuffix(got, "…") {
		t.Errorf("label of 30 runes = %q", got)
	}
}

// renderWorkflow renders the workflow page of steps as the handler does.
func renderWorkflow(t *testing.T, steps []*store.JobRow) string {
	t.Helper()
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[store.State]int64{}
	for _, s := range steps {
		counts[s.State]++
	}
	stats := store.WorkflowStats{ID: "w1", Counts: counts, CreatedAt: time.Now()}
	var buf bytes.Buffer
	if err := pages["workflow"].Execute(&buf, workflowPage(stats, steps)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// svgOf returns the graph's SVG element, checked to be well-formed XML.
func svgOf(t *testing.T, page string) string {
	t.Helper()
	start, end := strings.Index(page, `<svg id="graph"`), strings.Index(page, "</svg>")
	if start < 0 || end < start {
		t.Fatalf("no graph in the page:\n%s", page)
	}
	svg := page[start : end+len("</svg>")]
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed: %v\n%s", err, svg)
		}
	}
	return svg
}

// Each box carries its step's state as its class, which the style sheet colours, and links to
// the step's job; each edge has an arrowhead.
func TestGraphColoursByState(t *testing.T) {
	svg := svgOf(t, renderWorkflow(t, diamond()))
	for _, s := range diamond() {
		box := `<a class="node" href="/jobs/` + itoa(s.ID) + `" data-id="` + itoa(s.ID) + `" data-step="` + s.Step + `"`
		i := strings.Index(svg, box)
		if i < 0 {
			t.Fatalf("no link %s in\n%s", box, svg)
		}
		if rect := `<rect class="box ` + string(s.State) + `"`; !strings.HasPrefix(svg[strings.Index(svg[i:], "<rect")+i:], rect) {
			t.Errorf("step %s's box is not %s", s.Step, rect)
		}
	}
	if n := strings.Count(svg, `marker-end="url(#arrow)"`); n != 4 {
		t.Errorf("%d edges with an arrowhead, want 4", n)
	}
	css, err := os.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range store.States {
		if !strings.Contains(string(css), ".box."+string(s)+", .swatch."+string(s)+" { fill:") {
			t.Errorf("the style sheet gives state %s no colour", s)
		}
	}
}

// A step name is text wherever it shows: in the box, its title, its data attribute and the
// table, escaped, never markup.
func TestGraphEscapesStepNames(t *testing.T) {
	const name = `<b>&"x"</b>`
	steps := []*store.JobRow{jobStep(1, name, store.StateCompleted), jobStep(2, "after", store.StatePending, 1)}
	page := renderWorkflow(t, steps)
	svg := svgOf(t, page)
	if strings.Contains(page, name) || strings.Contains(page, "<b>") {
		t.Fatalf("the step name is in the page unescaped:\n%s", page)
	}
	const escaped = `&lt;b&gt;&amp;&#34;x&#34;&lt;/b&gt;`
	for _, want := range []string{`data-step="` + escaped + `"`, `<title>` + escaped + ` (job 1): completed</title>`, `>` + escaped + `</text>`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG lacks %s:\n%s", want, svg)
		}
	}
	if !strings.Contains(page, `<td>`+escaped+`</td>`) || !strings.Contains(page, `<a href="/jobs/1">`+escaped+`</a>`) {
		t.Errorf("the table does not show the name escaped:\n%s", page)
	}
}

// Past graphMax steps the page says so and shows the table only, of the steps it was given.
func TestGraphMax(t *testing.T) {
	var steps []*store.JobRow
	for i := int64(1); i <= graphMax+1; i++ {
		steps = append(steps, jobStep(i, "s-"+itoa(i), store.StateCompleted))
	}
	page := renderWorkflow(t, steps)
	if strings.Contains(page, `<svg id="graph"`) || !strings.Contains(page, `id="graph-omitted">501 steps are too many`) || strings.Count(page, `<tr data-step=`) != graphMax+1 {
		t.Fatal("a workflow over graphMax steps is drawn, or its table is short")
	}
}

// Few steps with more dependencies among them than graphEdgesMax are not drawn either: each
// of 100 steps waiting for every one before it makes 4,950 edges to lay out and send. A row
// names waitsShown of the jobs its step waits for and counts the rest.
func TestGraphEdgesMaxAndWaitsShown(t *testing.T) {
	var steps []*store.JobRow
	for i := int64(1); i <= 100; i++ {
		var deps []int64
		for d := int64(1); d < i; d++ {
			deps = append(deps, d)
		}
		steps = append(steps, jobStep(i, "s-"+itoa(i), store.StatePending, deps...))
	}
	page := renderWorkflow(t, steps)
	if strings.Contains(page, `<svg id="graph"`) || !strings.Contains(page, `id="graph-omitted">4950 dependencies are too many`) {
		t.Fatalf("100 steps with 4,950 dependencies among them are drawn:\n%.2000s", page)
	}
	last := page[strings.Index(page, `<tr data-step="s-100">`):]
	last = last[:strings.Index(last, "</tr>")]
	if n := strings.Count(last, `<a href="/jobs/`); n != 1+waitsShown || !strings.Contains(last, `<span class="legend more-waits">and 89 more</span>`) {
		t.Errorf("the row of a step waiting for 99 names %d links, and says:\n%s", n, last)
	}
	if strings.Count(page, `more-waits`) != 100-1-waitsShown {
		t.Errorf("%d rows count more waits, want %d", strings.Count(page, `more-waits`), 100-1-waitsShown)
	}
}
