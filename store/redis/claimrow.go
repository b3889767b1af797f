package redis

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rotahq/rota/store"
)

// A claim hands back each row as one string (lua/claim.lua's joinRow): how many fields the row
// has, the job's id, then the row's field names and values, all joined by NUL bytes. Every
// field is a substring of the row: a claim of a hundred jobs is a hundred strings to allocate,
// not three thousand. A value may hold a NUL (args are the caller's bytes): then the row splits
// into more parts than it says it has, and the job is read again whole after the claim, with
// the others like it in one round trip (getJobs).

var errClaimRow = errors.New("malformed claimed row")

// ambiguousRow is the error of a row with a NUL in a value, which Claim reads again.
type ambiguousRow struct{ id int64 }

func (e *ambiguousRow) Error() string { return fmt.Sprintf("job %d: a NUL byte in a value", e.id) }

// decodeClaimRows reads a claim's list of rows, and the ids of those to read again.
func decodeClaimRows(v any) (rows []*store.JobRow, again []int64, err error) {
	list, _ := v.([]any)
	rows = make([]*store.JobRow, 0, len(list))
	for _, x := range list {
		j, err := decodeWith(x, readClaimRow)
		if a := (*ambiguousRow)(nil); errors.As(err, &a) {
			again = append(again, a.id)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, j) // a row has a field at least (readClaimRow), so j is a job
	}
	return rows, again, nil
}

// readClaimRow reads a claimed row into f.
func readClaimRow(v any, f *jobFields) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("unexpected reply %T", v)
	}
	count, s, _ := strings.Cut(s, "\x00")
	id, s, ok := strings.Cut(s, "\x00")
	n, err1 := strconv.Atoi(count)
	i, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n < 2 || n%2 != 0 {
		return fmt.Errorf("%w: no count and id", errClaimRow)
	}
	if strings.Count(s, "\x00") != n-1 {
		return &ambiguousRow{id: i}
	}
	for range n / 2 {
		k, rest, _ := strings.Cut(s, "\x00")
		v, rest, _ := strings.Cut(rest, "\x00")
		f.set(k, v)
		s = rest
	}
	return nil
}
