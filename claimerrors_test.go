package rota

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A store that refuses every claim is reported once, again when the reason changes or a minute
// has passed, and once more when claims work again: not a line per poll.
func TestClaimErrorsAreNotRepeatedEveryPoll(t *testing.T) {
	var log bytes.Buffer
	clock := clockwork.NewFakeClockAt(epoch)
	c := claimErrors{clock: clock, logger: slog.New(slog.NewTextHandler(&log, nil)), queue: "mail"}
	lines := func() []string { return strings.Split(strings.TrimSpace(log.String()), "\n") }

	flushed := errors.New("namespace is not migrated")
	for range 100 {
		c.failed(flushed)
		clock.Advance(100 * time.Millisecond)
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "claim failed") || !strings.Contains(got[0], "failures=1") {
		t.Fatalf("100 failures for one reason within 10 s logged:\n%s", log.String())
	}
	c.failed(errors.New("connection refused"))
	if got := lines(); len(got) != 2 || !strings.Contains(got[1], "connection refused") || !strings.Contains(got[1], "failures=101") {
		t.Fatalf("a new reason is not logged with the count:\n%s", log.String())
	}
	clock.Advance(claimErrorRepeat)
	c.failed(errors.New("connection refused"))
	if got := lines(); len(got) != 3 {
		t.Fatalf("the same reason a minute later is not logged again:\n%s", log.String())
	}
	c.succeeded()
	c.succeeded()
	if got := lines(); len(got) != 4 || !strings.Contains(got[3], "claims work again") || !strings.Contains(got[3], "failures=102") {
		t.Fatalf("recovery is not said once:\n%s", log.String())
	}
	c.failed(flushed)
	if got := lines(); len(got) != 5 || !strings.Contains(got[4], "failures=1") {
		t.Fatalf("a failure after the recovery starts a new count:\n%s", log.String())
	}
}
