package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/rediskeys"
	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// memoryJobs is how many jobs BenchmarkBytesPerJob measures: enough that the per-job figure is
// not the noise of Redis' own allocations (a few KB), few enough to take seconds.
const memoryJobs = 20_000

// BenchmarkBytesPerJob measures what a typical job (small JSON args, default queue, no unique
// key) costs in Redis memory, as INFO memory's used_memory grows on a private server, for
// available jobs and for completed ones kept until pruned:
//
//	go test ./store/redis -run '^$' -bench BytesPerJob -benchtime 1x
//
// The figures are what retention must be sized by (docs/operations.md).
func BenchmarkBytesPerJob(b *testing.B) {
	url, _ := redistest.Server(b)
	c := redistest.Client(b, url)
	usedMemory := func() int64 {
		info, err := c.Info(context.Background(), "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				return n
			}
		}
		b.Fatalf("INFO memory has no used_memory:\n%s", info)
		return 0
	}
	var available, completed float64
	for i := range b.N {
		s := openURL(b, url, fmt.Sprintf("mem-%d", i), WithAutoMigrate())
		ctx := context.Background()
		before := usedMemory()
		batch := make([]store.InsertParams, insertChunk)
		for n := 0; n < memoryJobs; n += len(batch) {
			for j := range batch {
				batch[j] = store.InsertParams{Kind: "email.send", Queue: "default", MaxAttempts: 25,
					Args: fmt.Appendf(nil, `{"user_id":%d,"template":"welcome"}`, n+j)}
			}
			if _, err := s.Insert(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		afterInsert := usedMemory()
		for done := 0; done < memoryJobs; {
			rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"email.send"}, Max: completeChunk, Owner: "n", LeaseFor: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if len(rows) == 0 {
				b.Fatalf("claimed nothing after %d of %d", done, memoryJobs)
			}
			outcomes := make([]store.Outcome, len(rows))
			for j, r := range rows {
				outcomes[j] = store.Outcome{ID: r.ID, Fence: r.Fence, State: store.StateCompleted}
			}
			if _, err := s.Complete(ctx, outcomes); err != nil {
				b.Fatal(err)
			}
			done += len(rows)
		}
		afterComplete := usedMemory()
		available += float64(afterInsert-before) / memoryJobs
		completed += float64(afterComplete-before) / memoryJobs
		s.Close()
		if err := rediskeys.Delete(ctx, c, s.Namespace()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(available/float64(b.N), "B/available-job")
	b.ReportMetric(completed/float64(b.N), "B/completed-job")
	b.ReportMetric(0, "ns/op") // one op is the whole measurement; its time says nothing
}
