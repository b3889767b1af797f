package redis

import (
	"testing"
	"time"
)

// Store.Close with a subscription open does not wait for the subscriber's blocked read to time
// out (pingEvery, 3 s; go-redis' ReceiveTimeout does not return on a cancelled context), which
// every graceful shutdown of a node would pay. The bound is a third of that wait: Close does no
// I/O worth a second.
func TestCloseDoesNotWaitForThePing(t *testing.T) {
	s := open(t)
	if _, err := s.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with a subscription open", d)
	}
}
