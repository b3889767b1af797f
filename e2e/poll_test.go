package e2e

import "time"

// pollEvery is how often a wait checks its condition: soon enough after a change that the
// failover times the tests measure barely include it, yet seldom enough to leave the machine to
// the nodes.
const pollEvery = 20 * time.Millisecond

// eventually calls check every interval until it returns true, and reports whether that happened
// before within passed. The tests poll because what they wait for is in other processes, files
// and the database, none of which can signal them. check's last call comes after within has
// passed, so what it saw then is how far the wait got, for the caller's failure message. A check
// that sees the wait is hopeless, as when the node it waits for has exited, can fail the test
// at once.
func eventually(within, interval time.Duration, check func() bool) bool {
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}
