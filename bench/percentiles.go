package bench

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Percentiles summarise a set of latencies.
type Percentiles struct {
	N                  int
	P50, P90, P99, Max time.Duration
	// Dist is the distribution in distPoints quantiles, Dist[i] the (i+1)/distPoints quantile
	// (nearest rank): enough to draw it. Not in JSON.
	Dist []time.Duration
}

// percentiles summarises ds by the nearest-rank method: P99 of 100 samples is the 99th smallest,
// never an interpolation between two, so every figure reported was actually observed. ds is
// sorted in place. Nil when ds is empty.
func percentiles(ds []time.Duration) *Percentiles {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[max(i, 0)]
	}
	// The quantiles k/distPoints in integers: as floats, k/1000·n rounds up past a whole rank
	// for some k and n (0.07·100 is 7.000000000000001), one sample too far.
	q := make([]time.Duration, distPoints)
	for k := range q {
		q[k] = ds[max(((k+1)*len(ds)+distPoints-1)/distPoints-1, 0)]
	}
	return &Percentiles{N: len(ds), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ds[len(ds)-1], Dist: q}
}

// distPoints is how many quantiles Percentiles.Dist holds.
const distPoints = 1000

// Summarize is percentiles for other modules' systems (the peer comparison's BullMQ): the same
// summary, nearest rank, ds sorted in place.
func Summarize(ds []time.Duration) *Percentiles { return percentiles(ds) }

// MarshalJSON writes milliseconds, the unit people read latencies in, rather than nanoseconds.
func (p *Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		N     int     `json:"n"`
		P50ms float64 `json:"p50_ms"`
		P90ms float64 `json:"p90_ms"`
		P99ms float64 `json:"p99_ms"`
		MaxMs float64 `json:"max_ms"`
	}{p.N, ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max)})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
