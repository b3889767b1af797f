package redis

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// A claim's rows come packed from the script (packed.go) and read as Get reads the same jobs,
// in claim order, whatever the size of their fields: args of each of MessagePack's string
// lengths, and jobs whose claim writes through the script's general path (a unique key).
func TestClaimRowsAsGetReadsThem(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	sizes := []int{0, 20, 200, 300, 70_000} // fixstr, str 8, str 16, str 32
	for _, n := range []int{1, 16, 17, 60} {
		params := make([]store.InsertParams, n)
		for i := range params {
			pad := strings.Repeat("x", sizes[i%len(sizes)])
			params[i] = store.InsertParams{Kind: "k", Queue: "default", Args: fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, pad),
				MaxAttempts: 3, Priority: i % 3, Tags: []string{"t"}, Metadata: []byte(`{"m":1}`)}
			if i%4 == 1 {
				params[i].UniqueKey = fmt.Sprint("u", n, "-", i)
			}
		}
		if _, err := s.Insert(ctx, params); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: n, Owner: "n1", LeaseFor: time.Minute})
		if err != nil || len(rows) != n {
			t.Fatalf("claim of %d: %d rows, %v", n, len(rows), err)
		}
		for i, r := range rows {
			if i > 0 && r.Priority > rows[i-1].Priority {
				t.Errorf("claim of %d: row %d (priority %d) after priority %d", n, i, r.Priority, rows[i-1].Priority)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r, got) {
				t.Errorf("claim of %d: claimed row\n%+v\nGet\n%+v", n, r, got)
			}
			if r.State != store.StateRunning || r.Attempt != 1 || r.Owner != "n1" || len(r.Tags) != 1 {
				t.Errorf("claim of %d: row %+v", n, r)
			}
		}
	}
}

// A packed row that is cut short or holds something other than strings is an error, not a row
// with fields missing.
func TestReadPackedRefusesMalformedRows(t *testing.T) {
	good := "\x94\xa1k\xa1a\xa1s\xd9\x03run" // ["k", "a", "s", "run"] with a str 8
	var f jobFields
	if err := readPacked(good, &f); err != nil || f.v[fKind] != "a" || f.v[fState] != "run" {
		t.Fatalf("good row: %v, fields %+v", err, f)
	}
	for name, bad := range map[string]string{
		"empty":          "",
		"not an array":   "\xa1k",
		"odd elements":   "\x93\xa1k\xa1a\xa1s",
		"cut short":      "\x94\xa1k\xa1a\xa1s\xd9\x05run",
		"a number":       "\x92\xa1k\x01",
		"bytes after":    "\x92\xa1k\xa1a\xa1z",
		"header cut":     "\xdc\x00",
		"str 16 cut":     "\x92\xa1k\xda\x00",
		"missing values": "\x94\xa1k\xa1a",
	} {
		var f jobFields
		if err := readPacked(bad, &f); !errors.Is(err, errPacked) {
			t.Errorf("%s: %v, want errPacked", name, err)
		}
	}
}
