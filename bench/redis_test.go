package bench

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
)

// TestRedisSmoke runs every workload, tiny, on the test Redis, and checks that each left no key
// of its namespace behind and touched no other namespace's.
func TestRedisSmoke(t *testing.T) {
	url := redistest.URL(t)
	ns := redistest.Namespace(t, url)
	c := redistest.Client(t, url)
	// A key of another namespace with the same prefix stands for the server's other data.
	other := "rota:{" + ns + "-benchx}:keep"
	if err := c.Set(t.Context(), other, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Del(context.Background(), other) })

	cfg := Config{Jobs: 300, Batch: 70, Concurrency: 4, Workers: 10, Rate: 200, Duration: 300 * time.Millisecond}
	results, err := RunAll(t.Context(), Rota("rota-redis", Redis(redistest.StoreURL(t, url, ns))), Workloads, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		want := cfg.Jobs
		if r.Workload == Latency {
			want = 60
		}
		if r.Jobs != want || r.JobsPerSec <= 0 {
			t.Errorf("%s: jobs %d (want %d), %v jobs/s", r.Workload, r.Jobs, want, r.JobsPerSec)
		}
	}
	left, err := c.Keys(t.Context(), "rota:{"+ns+"-bench-*").Result()
	if err != nil || len(left) != 0 {
		t.Fatalf("keys left behind: %v, %v", left, err)
	}
	if c.Exists(t.Context(), other).Val() != 1 {
		t.Fatal("the benchmark deleted another namespace's key")
	}
}
