package e2e

import (
	"slices"
	"testing"
	"time"
)

// The leader lease in the failover run: its TTL, and how often the others try to take it. The
// leader renews every second.
const (
	failoverTTL = 3 * time.Second
	failoverTry = 1 * time.Second
	// schedulingMargin allows for the processes' scheduling on a busy machine: the follower's
	// tries drift by their own duration, and its lease call may be slow.
	schedulingMargin = 2 * time.Second
)

// When the leader is SIGKILLed, another node leads within the lease's TTL plus one try, as
// `rota status` shows, and leadership never overlaps: each node's log of becoming leader (with
// the lease's fencing token) and losing it shows intervals that follow each other with growing
// tokens. Leader-only services start after "became leader" and are stopped before "lost
// leadership" is logged, so disjoint intervals mean the rescuer and the pruner never ran on two
// nodes at once. The leader is killed twice, so both failovers (3 → 2 → 1 nodes) are measured.
func TestLeaderFailover(t *testing.T) {
	c := newCluster(t, sharedPostgres(t))
	flags := []string{"--leader-ttl", failoverTTL.String(), "--leader-renew", "1s", "--leader-try", failoverTry.String()}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id, flags...)
	}
	leader, token := c.waitLeader(t, "", 15*time.Second)
	bound := failoverTTL + failoverTry + schedulingMargin
	for range 2 {
		old := c.node(leader)
		old.kill(t)
		next, nextToken := c.waitLeader(t, old.id, 30*time.Second)
		// When the new leader took the lease, by its own log: not when the test saw it, which on a
		// loaded machine can be seconds later (a `rota status` process per poll).
		took := c.node(next).becameLeader(t, nextToken).Sub(old.killedAt)
		t.Logf("leader %s (token %d) SIGKILLed; %s leads (token %d) after %v (bound: TTL %v + try %v + margin %v = %v)",
			old.id, token, next, nextToken, took.Round(time.Millisecond), failoverTTL, failoverTry, schedulingMargin, bound)
		if took > bound {
			t.Errorf("failover took %v, over %v", took.Round(time.Millisecond), bound)
		}
		if nextToken <= token {
			t.Errorf("the new leader's token %d is not above the old one's %d", nextToken, token)
		}
		leader, token = next, nextToken
	}

	terms := c.leadership(t)
	for _, tm := range terms {
		t.Logf("%s led with token %d from %s to %s", tm.node, tm.token, tm.from.Format("15:04:05.000"), tm.to.Format("15:04:05.000"))
	}
	if len(terms) < 3 {
		t.Fatalf("%d terms of leadership in the logs, want at least 3 (two failovers)", len(terms))
	}
	for i := 1; i < len(terms); i++ {
		prev, cur := terms[i-1], terms[i]
		if cur.token <= prev.token {
			t.Errorf("%s's token %d after %s's %d: tokens must grow", cur.node, cur.token, prev.node, prev.token)
		}
		if !cur.from.After(prev.to) {
			t.Errorf("%s led from %s, before %s's term (token %d) ended at %s", cur.node, cur.from.Format(time.StampMicro),
				prev.node, prev.token, prev.to.Format(time.StampMicro))
		}
	}
	if last := terms[len(terms)-1]; last.node != leader || last.token != token {
		t.Errorf("the logs end with %s leading (token %d); rota status shows %s (token %d)", last.node, last.token, leader, token)
	}
	c.checkServicesInTerms(t, terms)
}

// becameLeader returns when the node logged that it became leader with token.
func (n *node) becameLeader(t *testing.T, token int64) time.Time {
	t.Helper()
	for _, r := range n.records("rota: became leader") {
		if r.int("token") == token {
			return r.Time
		}
	}
	t.Fatalf("%s leads with token %d by `rota status`, but did not log becoming leader with it:\n%s", n.id, token, tail(n.out.String(), 20))
	return time.Time{}
}

// term is one node's leadership, from its log.
type term struct {
	node     string
	token    int64
	from, to time.Time
}

// leadership reads every node's terms from its "became leader" and "lost leadership" records,
// in the order they began. A term that has not ended ends when the node was killed (it can do
// nothing after), or now.
func (c *cluster) leadership(t *testing.T) []term {
	t.Helper()
	now := time.Now()
	var terms []term
	for _, n := range c.nodes {
		var open *term
		for _, r := range parseLog(n.out.String()) {
			switch r.Msg {
			case "rota: became leader":
				if open != nil {
					t.Errorf("%s became leader again at %s without losing leadership first", n.id, r.Time)
				}
				open = &term{node: n.id, token: r.int("token"), from: r.Time}
			case "rota: lost leadership":
				if open == nil {
					t.Errorf("%s lost a leadership it did not have at %s", n.id, r.Time)
					continue
				}
				open.to = r.Time
				terms = append(terms, *open)
				open = nil
			}
		}
		if open != nil {
			open.to = now
			if !n.killedAt.IsZero() {
				open.to = n.killedAt
			}
			terms = append(terms, *open)
		}
	}
	slices.SortFunc(terms, func(a, b term) int { return a.from.Compare(b.from) })
	return terms
}

// checkServicesInTerms checks that every leader service a node started, it started within one of
// its own terms, under that term's token.
func (c *cluster) checkServicesInTerms(t *testing.T, terms []term) {
	t.Helper()
	for _, n := range c.nodes {
		for _, r := range n.records("rota: leader service started") {
			ok := false
			for _, tm := range terms {
				ok = ok || (tm.node == n.id && tm.token == r.int("token") && !r.Time.Before(tm.from) && !r.Time.After(tm.to))
			}
			if !ok {
				t.Errorf("%s started leader service %s with token %d at %s, outside its terms", n.id, r.str("service"), r.int("token"), r.Time)
			}
		}
	}
}
