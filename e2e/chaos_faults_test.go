package e2e

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// faults is the seeded schedule of the chaos suite and the nodes it acts on. Every choice (the
// next fault, its target slot, how long it lasts, the pause before the next) comes from the seed,
// so a seed replays the same schedule; what the nodes do meanwhile is theirs.
type faults struct {
	env   *chaosEnv
	rng   *rand.Rand
	start time.Time
	// slots hold the current process of each node; a killed or restarted node comes back in its
	// slot as a new incarnation, with a new node id (n2.3: slot 2, third process).
	slots       []*node
	incarnation []int
	log         []string
	// steps counts the schedule's steps (log also holds what a fault reports of itself).
	steps int
}

func newFaults(t *testing.T, env *chaosEnv, seed uint64) *faults {
	t.Helper()
	return &faults{env: env, rng: rand.New(rand.NewPCG(seed, 2)), start: time.Now(),
		slots: make([]*node, *chaosNodes), incarnation: make([]int, *chaosNodes)}
}

func (f *faults) nodeID(slot int) string {
	f.incarnation[slot]++
	return fmt.Sprintf("n%d.%d", slot+1, f.incarnation[slot])
}

func (f *faults) logf(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf("%7.2fs ", time.Since(f.start).Seconds())+fmt.Sprintf(format, args...))
}

// A fault is injected, held, then healed.
type fault struct {
	name   string
	inject func(t *testing.T)
	heal   func(t *testing.T)
	// minHold is how long the fault must last to be the fault it is named for.
	minHold time.Duration
	// heal orders the heals of one step, lowest first: the store's, then a stopped node's
	// SIGCONT, then a node's new start. A node started again while its store is down or full
	// exits at once, and on SQLite a stopped node may hold the write lock the new one needs.
	healOrder int
}

// The heal orders of fault kinds.
const (
	healStore = iota
	healResume
	healStart
)

// nodeFault names the faults that act on one node.
var nodeFault = map[string]bool{"kill": true, "pause": true, "restart": true}

// kinds lists the faults the store allows, by name, in a fixed order (the seed indexes it).
func (f *faults) kinds() []string {
	k := []string{"kill", "pause", "restart"}
	if f.env.proxy != nil {
		k = append(k, "cut")
	}
	if f.env.restartStore != nil {
		k = append(k, "store-restart")
	}
	if f.env.crashStore != nil {
		k = append(k, "store-crash")
	}
	if f.env.fillDisk != nil {
		k = append(k, "disk-full")
	}
	if f.env.failover != nil {
		k = append(k, "failover")
	}
	return k
}

// step waits a moment, then injects one fault, or two at once (a third of the time), holds
// them, and heals them.
func (f *faults) step(t *testing.T) {
	t.Helper()
	time.Sleep(time.Duration(500+f.rng.IntN(2500)) * time.Millisecond) // the schedule's gap
	n := 1
	if f.rng.IntN(3) == 0 {
		n = 2
	}
	var picked []fault
	used := map[int]bool{}
	kinds := f.kinds()
	seen := map[string]bool{}
	for range n {
		kind := kinds[f.rng.IntN(len(kinds))]
		if seen[kind] && !nodeFault[kind] {
			kind = "kill" // one store fault of a kind at a time
		}
		seen[kind] = true
		picked = append(picked, f.make(kind, used))
	}
	hold := time.Duration(500+f.rng.IntN(4500)) * time.Millisecond
	var names []string
	for _, p := range picked {
		names = append(names, p.name)
		hold = max(hold, p.minHold)
	}
	f.steps++
	f.logf("%s for %v", strings.Join(names, " + "), hold.Round(time.Millisecond))
	// A store restart holds the store down itself; the others are held here.
	for _, p := range picked {
		p.inject(t)
	}
	time.Sleep(hold)
	slices.SortStableFunc(picked, func(a, b fault) int { return cmp.Compare(a.healOrder, b.healOrder) })
	for _, p := range picked {
		p.heal(t)
	}
}

// make builds a fault of kind. Node faults take a slot no other fault of the step has.
func (f *faults) make(kind string, used map[int]bool) fault {
	slot := f.rng.IntN(len(f.slots))
	for used[slot] && len(used) < len(f.slots) {
		slot = (slot + 1) % len(f.slots)
	}
	if used[slot] { // every slot taken: a store fault instead
		kind = "cut"
		if f.env.proxy == nil {
			kind = "disk-full"
		}
	}
	storeHold := time.Duration(500+f.rng.IntN(2500)) * time.Millisecond
	pastLease := chaosJobLease + time.Duration(1000+f.rng.IntN(3000))*time.Millisecond
	switch kind {
	case "kill":
		used[slot] = true
		return fault{name: fmt.Sprintf("SIGKILL %s%s", f.slots[slot].id, f.leaderMark(slot)),
			inject: func(t *testing.T) { f.slots[slot].kill(t) },
			heal:   func(t *testing.T) { f.slots[slot] = f.env.startChaosNode(t, f.nodeID(slot)) }, healOrder: healStart}
	case "pause":
		used[slot] = true
		return fault{name: fmt.Sprintf("SIGSTOP %s%s past its job lease", f.slots[slot].id, f.leaderMark(slot)),
			inject:  func(t *testing.T) { f.slots[slot].signal(t, syscall.SIGSTOP) },
			heal:    func(t *testing.T) { f.slots[slot].signal(t, syscall.SIGCONT) },
			minHold: pastLease, healOrder: healResume}
	case "restart":
		used[slot] = true
		return fault{name: fmt.Sprintf("graceful restart of %s%s", f.slots[slot].id, f.leaderMark(slot)),
			inject: func(t *testing.T) { f.slots[slot].stopGracefully(t) },
			heal:   func(t *testing.T) { f.slots[slot] = f.env.startChaosNode(t, f.nodeID(slot)) }, healOrder: healStart}
	case "cut":
		return fault{name: "store connections cut",
			inject: func(t *testing.T) { f.env.proxy.cut(time.Hour) },
			heal:   func(*testing.T) { f.env.proxy.restore() }}
	case "store-restart":
		return fault{name: fmt.Sprintf("store restarted (down %v)", storeHold.Round(time.Millisecond)),
			inject: func(t *testing.T) { f.env.restartStore(t, storeHold) },
			heal:   func(*testing.T) {}}
	case "store-crash":
		return fault{name: fmt.Sprintf("store crashed (down %v)", storeHold.Round(time.Millisecond)),
			inject: func(t *testing.T) { f.env.crashStore(t, storeHold) },
			heal:   func(*testing.T) {}}
	case "failover":
		return fault{name: "Redis replica promoted",
			inject: func(t *testing.T) { f.logf("%s", f.env.failover(t)) },
			heal:   func(*testing.T) {}}
	case "disk-full":
		var heal func()
		return fault{name: "disk full",
			inject: func(t *testing.T) { heal = f.env.fillDisk(t) },
			heal:   func(*testing.T) { heal() }}
	}
	panic("unknown fault " + kind)
}

// leaderMark says whether the node in slot leads, by its log, when the schedule picks it.
func (f *faults) leaderMark(slot int) string {
	n := f.slots[slot]
	led := false
	for _, r := range parseLog(n.out.String()) {
		switch r.Msg {
		case "rota: became leader":
			led = true
		case "rota: lost leadership":
			led = false
		}
	}
	if led {
		return " (the leader)"
	}
	return ""
}

// healAll makes sure every slot has a running node at the end: faults heal as they go, but a node
// may have exited on its own, which the checks would not forgive silently.
func (f *faults) healAll(t *testing.T) {
	t.Helper()
	f.env.proxy.restore()
	for i, n := range f.slots {
		if n.exited() {
			f.logf("%s had exited (%v); started again", n.id, n.err)
			t.Errorf("chaos: node %s exited on its own: %v\n%s", n.id, n.err, tail(n.out.String(), 30))
			f.slots[i] = f.env.startChaosNode(t, f.nodeID(i))
		}
	}
}
