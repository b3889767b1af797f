package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Soak inserts one job at a time at Config.Rate for Config.Duration while workers run, like
// Latency, and reports every Config.Window how the system held up: start latency in that window,
// the benchmark process's resident memory, the store's size on disk. The node keeps completed
// jobs for one window only, so the pruner runs throughout and the store's size is bounded by
// retention. It is not part of "all": it runs as long as it is told to.
const Soak Workload = "soak"

// WindowDefault is the span of one line of a soak's report.
const WindowDefault = time.Minute

// Window is one span of a soak.
type Window struct {
	// At is the span's end, counted from the soak's start.
	At time.Duration `json:"at_ns"`
	// Started is how many jobs started in the span; Latency their insert→start percentiles.
	Started int          `json:"started"`
	Latency *Percentiles `json:"latency,omitempty"`
	// RSS is the benchmark process's resident memory at the span's end (the node runs in it);
	// StoreBytes the store's size on disk, where the system tells (Sizer).
	RSS        int64 `json:"rss_bytes,omitempty"`
	StoreBytes int64 `json:"store_bytes,omitempty"`
	// GoHeap is the live Go heap at the span's end and GoBytes what the Go runtime holds from the
	// OS (heap, stacks and its own structures, less what it gave back): what RSS holds beyond
	// GoBytes is memory outside Go's, such as the SQLite driver's page caches.
	GoHeap  int64 `json:"go_heap_bytes,omitempty"`
	GoBytes int64 `json:"go_bytes,omitempty"`
}

// Sizer is implemented by instances that can say how many bytes their store takes on disk.
type Sizer interface {
	Size(ctx context.Context) (int64, error)
}

// soakRing is how many inserts a soak remembers the return time of, in a ring that is allocated
// once so that the benchmark's own memory stays flat. A job whose slot was taken by a later
// insert (it started over a million inserts after its own) counts as not having waited; at the
// rates a soak runs jobs start within milliseconds.
const soakRing = 1 << 20

// soakSlot is one remembered insert: its sequence number and when its Insert returned.
type soakSlot struct {
	seq atomic.Int64
	at  atomic.Int64 // unix ns
}

func soak(ctx context.Context, inst Instance, cfg Config, res *Result) error {
	ring := make([]soakSlot, soakRing)
	for i := range ring {
		ring[i].seq.Store(-1)
	}
	total := cfg.jobsIn(cfg.Duration)
	var (
		mu      sync.Mutex
		samples []time.Duration // start latencies of the current window
		started = newCountdown(int64(total))
	)
	runner, err := inst.Workers(cfg.Workers, Hooks{
		Started: func(seq int64) {
			now := time.Now().UnixNano()
			var lat time.Duration
			slot := &ring[seq%soakRing]
			if slot.seq.Load() == seq {
				lat = time.Duration(max(now-slot.at.Load(), 0))
			} // else the handler started before Insert returned: no wait at all
			mu.Lock()
			samples = append(samples, lat)
			mu.Unlock()
			started.add()
		},
		Completed: func() {},
		Retention: cfg.Window,
	})
	if err != nil {
		return err
	}
	if err := runner.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	defer stop(runner)

	begin := time.Now()
	report := cfg.progress("soak", total)
	windows := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(cfg.Window)
		defer tick.Stop()
		closeWindows(tick.C, windows, int((cfg.Duration+cfg.Window-1)/cfg.Window), func() {
			mu.Lock()
			lat := samples
			samples = make([]time.Duration, 0, cap(lat))
			mu.Unlock()
			w := Window{At: time.Since(begin), Started: len(lat), Latency: percentiles(lat), RSS: residentBytes()}
			w.GoHeap, w.GoBytes = goMemory()
			if s, ok := inst.(Sizer); ok {
				if n, err := s.Size(ctx); err == nil {
					w.StoreBytes = n
				}
			}
			res.Windows = append(res.Windows, w)
			report.set(int(started.n.Load()))
		})
	})

	watch := startWatch()
	err = pacedEach(ctx, inst, cfg, 0, total, func(seq int64) {
		slot := &ring[seq%soakRing]
		slot.at.Store(time.Now().UnixNano())
		slot.seq.Store(seq)
	})
	watch.stop(res)
	// The last jobs start a moment after their inserts: they belong in the last window.
	started.within(ctx, cfg.Settle)
	close(windows)
	wg.Wait()
	report.finish()
	res.Jobs = total
	var all []time.Duration
	for _, w := range res.Windows {
		if w.Latency != nil {
			all = append(all, w.Latency.P99)
		}
	}
	// The summary row's latency is the spread of the windows' p99s: the worst is what a soak is
	// judged by.
	res.Latency, res.LatencyOf = percentiles(all), latencyOfSoak
	return err
}

// closeWindows closes a window (take) at each tick until end is closed, which closes the last
// one. The run's last window, the n-th, is closed by end, not by its tick: the jobs inserted in
// the run's last moments start a moment after it, and a tick on time made them a window of
// their own, a handful of jobs whose p99 stood for the whole run's worst.
func closeWindows(tick <-chan time.Time, end <-chan struct{}, n int, take func()) {
	closed := 0
	for {
		select {
		case <-end:
			take()
			return
		case <-tick:
			if closed < n-1 {
				take()
				closed++
			}
		}
	}
}

// goMemory is the live Go heap and what the Go runtime holds from the OS.
func goMemory() (heap, held int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	v := func(i int) int64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(samples[i].Value.Uint64())
	}
	return v(0), v(1) - v(2)
}

// residentBytes is this process's resident set (VmRSS), or 0 where /proc does not tell.
func residentBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
