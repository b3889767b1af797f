package redis

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
)

// A job is one hash, j:<id>, with short field names (absent means the zero value):
//
//	i id, k kind, q queue, s state, p priority, a attempt, m max attempts, r run_at, x expires_at,
//	c created_at, t attempted_at, z finalized_at, f fence, o owner, l lease_until, ab attempted
//	by (the latest claim's owner, absent in jobs claimed before it existed), cr cancel requested, u unique key, us unique states (",s1,s2,", emptied when the job gives
//	its key up), sc schedule, A args, T tags (JSON), M metadata, R result, E errors (JSON lines),
//	W workflow, st step, D dependencies (comma-separated ids, in order), ig ignores failed
//	dependencies, dn how many it still waits for (read only while pending; absent: one), dp has or had dependents
//	(deps.go).
//
// An error line is {"a": attempt, "t": at, "e": error, "r": trace, "n": node, "d": duration µs}.
//
// Times are integer microseconds since the Unix epoch, as decimal strings.

// micros is t as the store keeps it.
func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// microsOrEmpty is micros, or "" for the zero time.
func microsOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return micros(t)
}

// fromMicros reads a time the store wrote; "" is the zero time. Scores come back from Redis as
// doubles, which hold these integers exactly.
func fromMicros(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return time.Time{}, fmt.Errorf("time %q: %w", v, err)
		}
		n = int64(math.Round(f))
	}
	return time.UnixMicro(n).UTC(), nil
}

// truncMicros is t as it reads back: to the microsecond.
func truncMicros(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// fields turns a flat HGETALL reply into a map (jobs are read with jobFields instead).
func fields(v any) (map[string]string, error) {
	flat, ok := v.([]any)
	if !ok {
		if m, ok := v.(map[any]any); ok { // RESP3 maps
			out := make(map[string]string, len(m))
			for k, x := range m {
				out[text(k)] = text(x)
			}
			return out, nil
		}
		return nil, fmt.Errorf("unexpected reply %T", v)
	}
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		m[k] = val
	}
	return m, nil
}

// text is a reply element as a string: a bulk string as it is (fmt.Sprint, for every field of
// every row a claim reads, was most of the time a drain spent decoding).
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// errorLine is one attempt error as the scripts append it.
type errorLine struct {
	A int    `json:"a"`
	T int64  `json:"t"`
	E string `json:"e"`
	R string `json:"r,omitempty"`
	N string `json:"n,omitempty"`
	D int64  `json:"d,omitempty"` // µs
}

// jsonText is s as a JSON string, for the scripts to paste into an error line.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jobFields holds a job hash's fields by name, as read from a reply. It lives on the stack: a
// map per row was a tenth of what a drain allocated, and the garbage collector's work follows
// what is allocated.
type jobFields struct {
	v   [numFields]string
	has [numFields]bool // which were there (A and R may be, and empty)
	n   int             // fields read
}

// The fields of a job hash this build reads, in jobFields.v.
const (
	fID = iota
	fKind
	fQueue
	fState
	fPriority
	fAttempt
	fMaxAttempts
	fRunAt
	fExpiresAt
	fCreatedAt
	fAttemptedAt
	fFinalizedAt
	fFence
	fOwner
	fLeaseUntil
	fAttemptedBy
	fCancelRequested
	fUniqueKey
	fSchedule
	fArgs
	fTags
	fMetadata
	fResult
	fErrors
	fWorkflow
	fStep
	fDependsOn
	fIgnoreFailedDeps
	numFields
)

// fieldSlot is where each field name's value goes (see the layout above).
var fieldSlot = map[string]int{
	"i": fID, "k": fKind, "q": fQueue, "s": fState, "p": fPriority, "a": fAttempt, "m": fMaxAttempts,
	"r": fRunAt, "x": fExpiresAt, "c": fCreatedAt, "t": fAttemptedAt, "z": fFinalizedAt, "f": fFence,
	"o": fOwner, "l": fLeaseUntil, "ab": fAttemptedBy, "cr": fCancelRequested, "u": fUniqueKey,
	"sc": fSchedule, "A": fArgs, "T": fTags, "M": fMetadata, "R": fResult, "E": fErrors,
	"W": fWorkflow, "st": fStep, "D": fDependsOn, "ig": fIgnoreFailedDeps,
}

// set records one field; a field that comes twice takes its later value (a claim hands back
// the row it read with what it wrote appended, lua/claim.lua). Fields this build does not
// know are left out.
func (f *jobFields) set(k, v string) {
	f.n++
	if i, ok := fieldSlot[k]; ok {
		f.v[i], f.has[i] = v, true
	}
}

// readFields reads a flat HGETALL reply (or a RESP3 map) into f.
func readFields(v any, f *jobFields) error {
	switch x := v.(type) {
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			k, _ := x[i].(string)
			val, _ := x[i+1].(string)
			f.set(k, val)
		}
	case map[any]any: // RESP3 maps
		for k, val := range x {
			f.set(text(k), text(val))
		}
	default:
		return fmt.Errorf("unexpected reply %T", v)
	}
	return nil
}

// decodeJob reads a job hash; nil (with no error) when the hash is empty.
func decodeJob(v any) (*store.JobRow, error) { return decodeWith(v, readFields) }

// decodeWith reads one row with read (readFields for a hash, readClaimRow for a claim's row).
func decodeWith(v any, read func(any, *jobFields) error) (*store.JobRow, error) {
	var f jobFields
	if err := read(v, &f); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	return f.job()
}

// job is the row the fields make; nil when there were none.
func (f *jobFields) job() (*store.JobRow, error) {
	if f.n == 0 {
		return nil, nil
	}
	var firstErr error
	num := func(k, v string) int64 {
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("field %s = %q: %w", k, v, err)
		}
		return n
	}
	at := func(k, v string) time.Time {
		t, err := fromMicros(v)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("field %s: %w", k, err)
		}
		return t
	}
	j := &store.JobRow{
		ID: num("i", f.v[fID]), Kind: f.v[fKind], Queue: f.v[fQueue], State: store.State(f.v[fState]),
		Priority: int(num("p", f.v[fPriority])), Attempt: int(num("a", f.v[fAttempt])), MaxAttempts: int(num("m", f.v[fMaxAttempts])),
		RunAt: at("r", f.v[fRunAt]), ExpiresAt: at("x", f.v[fExpiresAt]), UniqueKey: f.v[fUniqueKey], Schedule: f.v[fSchedule],
		CreatedAt: at("c", f.v[fCreatedAt]), AttemptedAt: at("t", f.v[fAttemptedAt]), FinalizedAt: at("z", f.v[fFinalizedAt]),
		Owner: f.v[fOwner], AttemptedBy: f.v[fAttemptedBy], LeaseUntil: at("l", f.v[fLeaseUntil]), Fence: num("f", f.v[fFence]), CancelRequested: f.v[fCancelRequested] != "",
	}
	if f.has[fArgs] {
		j.Args = []byte(f.v[fArgs])
	}
	if f.v[fMetadata] != "" {
		j.Metadata = []byte(f.v[fMetadata])
	}
	if f.has[fResult] {
		j.Result = []byte(f.v[fResult])
	}
	if f.v[fTags] != "" {
		if err := json.Unmarshal([]byte(f.v[fTags]), &j.Tags); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("tags: %w", err)
		}
	}
	j.Workflow, j.Step, j.IgnoreFailedDeps = f.v[fWorkflow], f.v[fStep], f.v[fIgnoreFailedDeps] != ""
	if f.v[fDependsOn] != "" {
		ids, err := parseIDs(f.v[fDependsOn])
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("dependencies: %w", err)
		}
		j.DependsOn = ids
	}
	if f.v[fErrors] != "" {
		sc := bufio.NewScanner(strings.NewReader(f.v[fErrors]))
		sc.Buffer(nil, len(f.v[fErrors])+1)
		for sc.Scan() {
			var l errorLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("errors: %w", err)
				}
				continue
			}
			j.Errors = append(j.Errors, store.AttemptError{Attempt: l.A, At: time.UnixMicro(l.T).UTC(), Error: l.E, Trace: l.R,
				Node: l.N, Duration: time.Duration(l.D) * time.Microsecond})
		}
	}
	if firstErr != nil {
		return nil, fmt.Errorf("job %s: %w", f.v[fID], firstErr)
	}
	return j, nil
}

// decodeJobs reads a list of job hashes, leaving out empty ones.
func decodeJobs(v any) ([]*store.JobRow, error) {
	list, _ := v.([]any)
	out := make([]*store.JobRow, 0, len(list))
	for _, x := range list {
		j, err := decodeJob(x)
		if err != nil {
			return nil, err
		}
		if j != nil {
			out = append(out, j)
		}
	}
	return out, nil
}

// toInt reads an integer reply (or a decimal string).
func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func toStr(v any) string {
	s, _ := v.(string)
	return s
}
