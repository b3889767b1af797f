package dashboard

import (
	"slices"

	"github.com/rotahq/rota/store"
)

// The workflow graph is laid out on the server, in SVG units (pixels): every step a box, in
// rows from the top, one layer after another.
const (
	boxW = 160
	boxH = 40
	gapX = 24
	// gapY leaves room between layers for the edges to curve and their arrowheads to show;
	// the rows a wide layer wraps onto are closer (gapWrap), so that it reads as one block.
	gapY    = 48
	gapWrap = 12
	pad     = 12
	// rowMax is how many boxes one row holds, about what a laptop's page is wide: a wider
	// layer (a batch of a hundred jobs) wraps onto the rows below it, so the graph grows down,
	// which a page scrolls well, rather than sideways.
	rowMax = 6
	// labelMax is how many characters of a step name fit a box; the box's title has it whole.
	labelMax = 20
)

// graphMax bounds the steps drawn, and graphEdgesMax the dependencies among them: past either
// a graph is too dense to read (and to lay out and send at every reload), and the table says
// more.
const (
	graphMax      = 500
	graphEdgesMax = 2000
)

// graph is a workflow laid out for drawing.
type graph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

// graphNode is one step's box: X and Y are its top left corner, CX its middle, where its two
// lines of text, at NameY and StateY, are centred.
type graphNode struct {
	ID                int64
	Step              string
	Label             string
	State             store.State
	Layer             int
	X, Y, W, H        int
	CX, NameY, StateY int
}

// graphEdge runs from the bottom of a dependency's box (X1, Y1) to the top of its dependent's
// (X2, Y2), as a curve whose control points (X1, CY1) and (X2, CY2) make it leave and arrive
// vertically.
type graphEdge struct {
	From, To       int64
	X1, Y1, X2, Y2 int
	CY1, CY2       int
	// FromState colours the edge: one from a completed step no longer holds its dependent.
	FromState store.State
}

// layers places each step in a layer: 0 for a step that waits for no other step of the
// workflow, else one more than the deepest step it waits for (deps, from stepDeps). It walks
// the steps in Kahn's order, so a step is placed after everything it waits for; steps caught in a
// cycle, which no insert can make, go on one layer after the others rather than nowhere.
func layers(deps [][]int) []int {
	waits := make([]int, len(deps))
	next := make([][]int, len(deps))
	for i, ds := range deps {
		waits[i] = len(ds)
		for _, j := range ds {
			next[j] = append(next[j], i)
		}
	}
	layer := make([]int, len(deps))
	placed := make([]bool, len(deps))
	var free []int
	for i := range deps {
		if waits[i] == 0 {
			free = append(free, i)
		}
	}
	deepest := 0
	for len(free) > 0 {
		i := free[0]
		free = free[1:]
		placed[i] = true
		deepest = max(deepest, layer[i])
		for _, n := range next[i] {
			layer[n] = max(layer[n], layer[i]+1)
			if waits[n]--; waits[n] == 0 {
				free = append(free, n)
			}
		}
	}
	for i := range deps {
		if !placed[i] {
			layer[i] = deepest + 1
		}
	}
	return layer
}

// layout lays out the steps: layer by layer from the top, each layer's steps in the order
// given (by job id, the order they were inserted in), wrapped every rowMax boxes, each row
// centred on the widest. It returns nil
// for no steps.
func layout(steps []*store.JobRow) *graph {
	if len(steps) == 0 {
		return nil
	}
	deps := stepDeps(steps)
	layer := layers(deps)
	depth := 0
	for _, l := range layer {
		depth = max(depth, l+1)
	}
	byLayer := make([][]int, depth)
	for i, l := range layer {
		byLayer[l] = append(byLayer[l], i)
	}
	type row struct {
		steps []int
		y     int
	}
	var rows []row
	y := pad
	for _, in := range byLayer {
		for k := 0; k < len(in); k += rowMax {
			switch {
			case len(rows) == 0:
			case k == 0:
				y += boxH + gapY
			default:
				y += boxH + gapWrap
			}
			rows = append(rows, row{in[k:min(k+rowMax, len(in))], y})
		}
	}
	widest := 0
	for _, r := range rows {
		widest = max(widest, len(r.steps))
	}
	rowWidth := func(n int) int { return n*boxW + (n-1)*gapX }
	g := &graph{Width: rowWidth(widest) + 2*pad, Height: y + boxH + pad, Nodes: make([]graphNode, len(steps))}
	for _, r := range rows {
		x0 := pad + (rowWidth(widest)-rowWidth(len(r.steps)))/2
		for k, i := range r.steps {
			s, x := steps[i], x0+k*(boxW+gapX)
			g.Nodes[i] = graphNode{ID: s.ID, Step: s.Step, Label: label(s.Step), State: s.State, Layer: layer[i],
				X: x, Y: r.y, W: boxW, H: boxH, CX: x + boxW/2, NameY: r.y + 17, StateY: r.y + 32}
		}
	}
	for i, ds := range deps {
		to := g.Nodes[i]
		for _, j := range ds {
			from := g.Nodes[j]
			e := graphEdge{From: from.ID, To: to.ID, FromState: from.State,
				X1: from.CX, Y1: from.Y + boxH, X2: to.CX, Y2: to.Y}
			bend := max((e.Y2-e.Y1)/2, gapY/2)
			e.CY1, e.CY2 = e.Y1+bend, e.Y2-bend
			g.Edges = append(g.Edges, e)
		}
	}
	return g
}

// stepDeps lists, for each step, the steps it waits for, by index, each once. Dependencies
// that are not steps (a job inserted with DependsOn may name any job) are left out: the table
// shows them.
func stepDeps(steps []*store.JobRow) [][]int {
	index := make(map[int64]int, len(steps))
	for i, s := range steps {
		index[s.ID] = i
	}
	out := make([][]int, len(steps))
	for i, s := range steps {
		for _, dep := range s.DependsOn {
			if j, ok := index[dep]; ok && j != i && !slices.Contains(out[i], j) {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}

// label shortens a step name to what fits its box.
func label(name string) string {
	r := []rune(name)
	if len(r) <= labelMax {
		return name
	}
	return string(r[:labelMax-1]) + "…"
}
