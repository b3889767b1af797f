package sqlite

import (
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// SQLite prepares a statement again on its next step whenever the value bound to its LIMIT
// changes. A claim's UPDATE … RETURNING takes about 0.3 ms to prepare, and the size of a claim
// (the workers free at that moment) changes from one claim to the next: bound, the limit made the
// preparing 5 % of a drain's CPU. byLimit writes limits up to literalLimitMax into the statement
// text instead, so that each size has a statement of its own in the writer's cache; a larger
// limit stays bound, and its claim is large enough to carry the cost.
const literalLimitMax = 256

// byLimit is one statement with a ":limit" parameter, and its texts with the limit written in,
// each made the first time a claim of that size asks for it.
type byLimit struct {
	query string
	mu    sync.Mutex
	texts [literalLimitMax + 1]string // texts[n] has LIMIT n; "" until asked for
}

func newByLimit(query string) *byLimit {
	if !strings.Contains(query, ":limit") {
		panic("sqlite: byLimit of a statement without :limit") // a mistake of the build
	}
	return &byLimit{query: query}
}

// limited returns the statement for limit n with args, to which it adds :limit when the limit
// is not written in.
func (b *byLimit) limited(n int, args ...any) (string, []any) {
	if n < 0 || n > literalLimitMax {
		return b.query, append(args, sql.Named("limit", n))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.texts[n] == "" {
		b.texts[n] = strings.ReplaceAll(b.query, ":limit", strconv.Itoa(n))
	}
	return b.texts[n], args
}
