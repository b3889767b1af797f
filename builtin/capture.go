package builtin

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"
)

// tailBytes is how much of the end of stderr (or of an error response) goes into a failed
// attempt's error: enough for the last lines of a stack trace, small enough to read in a list.
const tailBytes = 1024

// capture keeps the first limit bytes written to it and, separately, the last tailBytes, and
// discards the rest: a program that prints gigabytes costs no memory, and the error of a failed
// run still shows how its output ended.
type capture struct {
	limit int

	mu    sync.Mutex
	head  []byte
	tail  []byte // ring buffer of the last tailBytes bytes
	next  int    // where the ring writes next
	total int64
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

// Write never fails, so the program never sees a broken pipe because of the limit.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	for _, b := range p[max(0, len(p)-tailBytes):] {
		if len(c.tail) < tailBytes {
			c.tail = append(c.tail, b)
			continue
		}
		c.tail[c.next] = b
		c.next = (c.next + 1) % tailBytes
	}
	return len(p), nil
}

// String returns the kept head of the output, as valid UTF-8.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(string(c.head), "\uFFFD")
}

// Truncated reports whether more was written than was kept.
func (c *capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(len(c.head))
}

// Tail returns the last bytes written, trimmed of surrounding space, marked with "…" when it does
// not start at the beginning of the output.
func (c *capture) Tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := append(append([]byte{}, c.tail[c.next:]...), c.tail[:c.next]...)
	// A cut may fall inside a multi-byte character.
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if c.total > int64(len(c.tail)) && s != "" {
		s = "…" + s
	}
	return s
}

// shrink halves the kept head, for a result that must fit the job's result limit.
func (c *capture) shrink() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.head = c.head[:len(c.head)/2]
}

// encodedSize is the size of v as JSON, as the job's result will hold it.
func encodedSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
