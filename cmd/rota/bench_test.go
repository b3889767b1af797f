package main

import (
	"encoding/json"
	"testing"

	"github.com/rotahq/rota/internal/redistest"
)

// `rota bench --store redis://…` runs the workloads in namespaces of their own and leaves none
// of their keys behind, nor touches the named namespace.
func TestBenchRedis(t *testing.T) {
	e := newEnv(t)
	url := redistest.URL(t)
	ns := redistest.Namespace(t, url)
	e.store = redistest.StoreURL(t, url, ns)
	c := redistest.Client(t, url)
	keep := "rota:{" + ns + "}:keep" // stands for the named namespace's own data
	if err := c.Set(t.Context(), keep, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := e.run("bench", "--workload", "all", "--jobs", "200", "--batch", "50", "--workers", "10",
		"--rate", "100", "--duration", "200ms", "-o", "json").ok(t)
	var results []struct {
		System   string `json:"system"`
		Workload string `json:"workload"`
		Jobs     int    `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &results); err != nil || len(results) != 4 {
		t.Fatalf("results (%v):\n%s\n%s", err, r.stdout, r.stderr)
	}
	for _, res := range results {
		if res.System != "rota-redis" || res.Jobs == 0 {
			t.Errorf("result %+v", res)
		}
	}
	if left, _ := c.Keys(t.Context(), "rota:{"+ns+"-bench-*").Result(); len(left) != 0 {
		t.Fatalf("bench left %d keys behind, such as %s", len(left), left[0])
	}
	if c.Exists(t.Context(), keep).Val() != 1 {
		t.Fatal("bench deleted a key of the named namespace")
	}
}

// The workflow workloads run on fresh SQLite files beside the named one and report their
// figures.
func TestBenchWorkflows(t *testing.T) {
	e := newEnv(t)
	var fan struct {
		Steps  int   `json:"steps"`
		Insert int64 `json:"insert_ns"`
		Fan    int64 `json:"fan_ns"`
		Drain  int64 `json:"drain_ns"`
	}
	r := e.run("bench", "--workload", "fan-out-in", "--jobs", "200", "--workers", "10", "-o", "json").ok(t)
	if err := json.Unmarshal([]byte(r.stdout), &fan); err != nil || fan.Steps != 200 || fan.Insert <= 0 || fan.Fan <= 0 || fan.Drain <= 0 {
		t.Fatalf("fan-out-in: %+v (%v):\n%s", fan, err, r.stdout)
	}
	var chain struct {
		Steps int `json:"steps"`
		Gap   struct {
			P99 float64 `json:"p99_ms"`
		} `json:"gap"`
	}
	r = e.run("bench", "--workload", "chain", "--jobs", "20", "-o", "json").ok(t)
	if err := json.Unmarshal([]byte(r.stdout), &chain); err != nil || chain.Steps != 20 || chain.Gap.P99 <= 0 {
		t.Fatalf("chain: %+v (%v):\n%s", chain, err, r.stdout)
	}
}
