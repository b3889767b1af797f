package rota

import "time"

// Retention says how long finished jobs are kept before the leader deletes them. Zero takes the
// default; a negative value keeps jobs in that state forever.
type Retention struct {
	Completed time.Duration // Defaults to 24 h.
	Cancelled time.Duration // Defaults to 7 days.
	Discarded time.Duration // Defaults to 7 days: failures deserve time to be looked at.
	Expired   time.Duration // Defaults to 7 days.
	// Stats is how long the fleet's per-minute counts are kept. Defaults to
	// StatsRetentionDefault.
	Stats time.Duration
}

func (r Retention) withDefaults() Retention {
	setDefault(&r.Completed, 24*time.Hour)
	setDefault(&r.Cancelled, 7*24*time.Hour)
	setDefault(&r.Discarded, 7*24*time.Hour)
	setDefault(&r.Expired, 7*24*time.Hour)
	setDefault(&r.Stats, StatsRetentionDefault)
	return r
}
