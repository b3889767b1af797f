package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rotahq/rota/store"
)

// A full disk met by one request of a group fails that request alone; its neighbours commit,
// and every caller's answer says what happened to its jobs.
func TestFullDiskFailsOnlyTheRequestThatMetIt(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, WithLogger(discard))
	mk := func(q string, n int) []store.InsertParams {
		args, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", n)})
		return []store.InsertParams{{Kind: "k", Queue: q, Args: args, MaxAttempts: 1, UniqueKey: q}}
	}
	capPages(t, s, 20)
	release := holdWriter(t, s)
	errs := make([]chan error, 3)
	sizes := []int{10, 1 << 20, 10}
	for i := range errs {
		errs[i] = make(chan error, 1)
		go func() {
			_, err := s.Insert(ctx, mk(fmt.Sprintf("q%d", i), sizes[i]))
			errs[i] <- err
		}()
		waitQueued(s, i+1)
	}
	release()
	got := []error{<-errs[0], <-errs[1], <-errs[2]}
	for i, err := range got {
		var rows int
		if qerr := s.db.QueryRow(`SELECT count(*) FROM jobs WHERE queue = ?`, fmt.Sprintf("q%d", i)).Scan(&rows); qerr != nil {
			t.Fatal(qerr)
		}
		if (err == nil) != (rows == 1) {
			t.Errorf("request %d: answer %v but %d rows stored", i, err, rows)
		}
		if i == 1 && !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("big insert: %v, want ErrUnavailable", err)
		}
		if i != 1 && err != nil {
			t.Errorf("small insert %d failed with its neighbour: %v", i, err)
		}
	}
}
