package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// status is what `rota status -o json` prints, as far as the tests read it.
type status struct {
	Leader *struct {
		Owner     string    `json:"owner"`
		Token     int64     `json:"token"`
		Held      bool      `json:"held"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"leader"`
	Nodes []struct {
		ID string `json:"id"`
	} `json:"nodes"`
}

// status runs `rota status -o json`, the operator's view of the fleet.
func (c *cluster) status(t *testing.T) status {
	t.Helper()
	var s status
	out := c.rota("status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("rota status -o json: %v\n%s", err, out)
	}
	return s
}

// leader returns the node that `rota status` shows leading, and its token, or "" when nobody
// holds the lease.
func (c *cluster) leader(t *testing.T) (string, int64) {
	t.Helper()
	s := c.status(t)
	if s.Leader == nil || !s.Leader.Held {
		return "", 0
	}
	return s.Leader.Owner, s.Leader.Token
}

// waitLeader polls `rota status` until a node other than not leads, and returns it.
func (c *cluster) waitLeader(t *testing.T, not string, within time.Duration) (string, int64) {
	t.Helper()
	var owner string
	var token int64
	led := eventually(within, pollEvery, func() bool {
		owner, token = c.leader(t)
		return owner != "" && owner != not
	})
	if !led {
		t.Fatalf("no leader other than %q within %v: %+v", not, within, c.status(t))
	}
	return owner, token
}
