package e2e

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/syncbuf"
)

// logBuffer collects a process's output while the test reads it.
type logBuffer = syncbuf.Buffer

// record is one line of a node's JSON log (--log-format json). A line that is not JSON (a panic's
// stack) is kept whole as Msg, so a search for it still finds it.
type record struct {
	Time  time.Time
	Level string
	Msg   string
	Attrs map[string]any
}

// parseLog reads a node's log, skipping a last line the node may still be writing.
func parseLog(s string) []record {
	var out []record
	for line := range strings.Lines(s) {
		if !strings.HasSuffix(line, "\n") {
			break
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var attrs map[string]any
		if err := json.Unmarshal([]byte(line), &attrs); err != nil {
			out = append(out, record{Msg: line})
			continue
		}
		r := record{Attrs: attrs}
		r.Msg, _ = attrs["msg"].(string)
		r.Level, _ = attrs["level"].(string)
		if ts, ok := attrs["time"].(string); ok {
			r.Time, _ = time.Parse(time.RFC3339Nano, ts)
		}
		out = append(out, r)
	}
	return out
}

// int returns the attribute key as an integer (JSON numbers decode as float64).
func (r record) int(key string) int64 {
	f, _ := r.Attrs[key].(float64)
	return int64(f)
}

// str returns the attribute key as a string.
func (r record) str(key string) string {
	s, _ := r.Attrs[key].(string)
	return s
}
