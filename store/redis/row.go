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
//	dependencies, dn how many it still waits for (read only while pending), dp has or had dependents
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

// fields turns a flat HGETALL reply into a map. A field that comes twice takes its later value:
// a claim hands back the row it read with what it wrote appended (lua/claim.lua).
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

// decodeJob reads a job hash; nil (with no error) when the hash is empty.
func decodeJob(v any) (*store.JobRow, error) {
	m, err := fields(v)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	var firstErr error
	num := func(k string) int64 {
		if m[k] == "" {
			return 0
		}
		n, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("field %s = %q: %w", k, m[k], err)
		}
		return n
	}
	at := func(k string) time.Time {
		t, err := fromMicros(m[k])
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("field %s: %w", k, err)
		}
		return t
	}
	j := &store.JobRow{
		ID: num("i"), Kind: m["k"], Queue: m["q"], State: store.State(m["s"]),
		Priority: int(num("p")), Attempt: int(num("a")), MaxAttempts: int(num("m")),
		RunAt: at("r"), ExpiresAt: at("x"), UniqueKey: m["u"], Schedule: m["sc"],
		CreatedAt: at("c"), AttemptedAt: at("t"), FinalizedAt: at("z"),
		Owner: m["o"], AttemptedBy: m["ab"], LeaseUntil: at("l"), Fence: num("f"), CancelRequested: m["cr"] != "",
	}
	if a, ok := m["A"]; ok {
		j.Args = []byte(a)
	}
	if md := m["M"]; md != "" {
		j.Metadata = []byte(md)
	}
	if r, ok := m["R"]; ok {
		j.Result = []byte(r)
	}
	if t := m["T"]; t != "" {
		if err := json.Unmarshal([]byte(t), &j.Tags); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("tags: %w", err)
		}
	}
	j.Workflow, j.Step, j.IgnoreFailedDeps = m["W"], m["st"], m["ig"] != ""
	if d := m["D"]; d != "" {
		ids, err := parseIDs(d)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("dependencies: %w", err)
		}
		j.DependsOn = ids
	}
	if e := m["E"]; e != "" {
		sc := bufio.NewScanner(strings.NewReader(e))
		sc.Buffer(nil, len(e)+1)
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
		return nil, fmt.Errorf("job %s: %w", m["i"], firstErr)
	}
	return j, nil
}

// decodeJobs reads a list of job hashes.
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
