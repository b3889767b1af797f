package redis

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// replicaOf starts a private redis-server replicating the one at primary and waits until it has
// the primary's data.
func replicaOf(t *testing.T, primary string) string {
	t.Helper()
	u, err := neturl.Parse(primary)
	if err != nil {
		t.Fatal(err)
	}
	url, _ := redistest.Server(t, "--replicaof", u.Hostname(), u.Port())
	c := redistest.Client(t, url)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info := c.Info(t.Context(), "replication").Val()
		if strings.Contains(info, "master_link_status:up") {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica did not sync with %s:\n%s", primary, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WithWaitReplicas: every state-changing call returns once a replica has it, and fails with
// ErrNotReplicated (and store.ErrUnavailable) when too few replicas acknowledge, while the write
// stays on the primary.
func TestWaitReplicas(t *testing.T) {
	primary, _ := redistest.Server(t)
	replica := replicaOf(t, primary)
	ns := redistest.Namespace(t, primary)
	openURL(t, primary, ns, WithAutoMigrate())
	ctx := t.Context()

	// One replica asked, one there: small and large (transaction) writes both pass.
	s := openURL(t, primary, ns, WithWaitReplicas(1, 5*time.Second))
	many := make([]store.InsertParams, 1500) // two scripts in one MULTI/EXEC
	for i := range many {
		many[i] = job("k")
	}
	if _, err := s.Insert(ctx, many); err != nil {
		t.Fatalf("Insert of 1500 with a replica: %v", err)
	}
	res, err := s.Insert(ctx, []store.InsertParams{job("k")})
	if err != nil {
		t.Fatalf("Insert with a replica: %v", err)
	}
	// The reply came after the replica acknowledged: it has the job already.
	rc := redistest.Client(t, replica)
	if n := rc.Exists(ctx, fmt.Sprintf("rota:{%s}:j:%d", ns, res[0].Job.ID)).Val(); n != 1 {
		t.Fatalf("the replica lacks job %d after Insert returned", res[0].Job.ID)
	}
	rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 600, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(rows) != 600 {
		t.Fatalf("Claim = %d rows, %v", len(rows), err)
	}
	outcomes := make([]store.Outcome, len(rows)) // over completeChunk: a transaction
	for i, r := range rows {
		outcomes[i] = store.Outcome{ID: r.ID, Fence: r.Fence, State: store.StateCompleted}
	}
	if _, err := s.Complete(ctx, outcomes); err != nil {
		t.Fatalf("Complete of 600 with a replica: %v", err)
	}

	// Two asked, one there: the error says so, and the job was written.
	short := 200 * time.Millisecond
	s2 := openURL(t, primary, ns, WithWaitReplicas(2, short))
	start := time.Now()
	_, err = s2.Insert(ctx, []store.InsertParams{{Kind: "k", Queue: "two", Args: []byte(`{}`), MaxAttempts: 1}})
	if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "1 of 2 replicas") {
		t.Fatalf("Insert asking for 2 replicas of 1 = %v, want ErrNotReplicated and ErrUnavailable", err)
	}
	if waited := time.Since(start); waited < short {
		t.Errorf("Insert returned after %v, before the wait timeout %v", waited, short)
	}
	if st, err := s2.QueueLoad(ctx, "two"); err != nil || st.Counts[store.StateAvailable] != 1 {
		t.Fatalf("the unreplicated insert is not on the primary: %+v, %v", st, err)
	}
	if _, err := s2.Get(ctx, res[0].Job.ID); err != nil {
		t.Fatalf("Get (no write, no wait) = %v", err)
	}
}

// Without a replica, waiting for one fails every write (after the timeout) but not the reads,
// except a claim under no limit, which returns its jobs; the URL's wait_replicas and
// wait_timeout say the same as the option.
func TestWaitReplicasNone(t *testing.T) {
	primary, _ := redistest.Server(t)
	ns := redistest.Namespace(t, primary)
	unwaiting := openURL(t, primary, ns, WithAutoMigrate())
	s := openURL(t, redistest.StoreURL(t, primary, ns)+"&wait_replicas=1&wait_timeout=50ms", ns)
	ctx := t.Context()
	_, err := s.Insert(ctx, []store.InsertParams{job("k")})
	if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "on the primary") {
		t.Fatalf("Insert with no replica = %v, want ErrNotReplicated and ErrUnavailable", err)
	}
	if err := s.PauseQueue(ctx, "default"); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("PauseQueue with no replica = %v", err)
	}
	if got, err := s.Get(ctx, 1); err != nil || got.State != store.StateAvailable {
		t.Fatalf("Get = %+v, %v; want the job the failed Insert wrote", got, err)
	}
	if _, err := s.QueueStats(ctx); err != nil {
		t.Fatalf("QueueStats (read only) = %v", err)
	}
	ctxShort, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := unwaiting.ResumeQueue(ctx, "default"); err != nil { // the failed PauseQueue paused it
		t.Fatal(err)
	}
	claim := store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 2, Owner: "n", LeaseFor: time.Minute}
	// A claim a failover may lose without harm (see Store.Claim) returns its job; waiting, it
	// would have failed with the job left running under this node, never started.
	if rows, err := s.Claim(ctxShort, claim); err != nil || len(rows) != 1 || rows[0].ID != 1 {
		t.Fatalf("Claim under no limit with no replica = %d rows, %v; want job 1", len(rows), err)
	}
	// Under a limit, it waits, and says its write may not be on a replica.
	if err := unwaiting.SetLimit(ctx, store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := unwaiting.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctxShort, claim); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Claim under a limit with no replica = %v, want ErrNotReplicated", err)
	}
}
