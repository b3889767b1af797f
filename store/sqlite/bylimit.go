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
// preparing 5 % of a drain's CPU. byLimit writes the limits of literalSizes into the statement
// text instead, so that each has a statement of its own in the writer's cache, and a claim of
// another size up to literalLimitMax is taken in pieces of those sizes (piece). A statement
// prepared costs the writer's connection about 36 KB outside Go's heap: one text for every size
// up to 256 grew a busy node by 18 MB as its claims met the sizes one by one.
const literalLimitMax = 256

// literalSizes are the limits written into statement texts, ascending: every size up to 16, then
// about one in 1.5 up to literalLimitMax, so that a claim takes at most three pieces (a claim of
// 87 is 64, 16 and 7). Inserts and completions are cut to the same sizes, for the same reason:
// one prepared text per size they meet (see completeSQLs).
var literalSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 32, 48, 64, 96, 128, 192, 256}

// bySize returns a table of statement texts by size: text(n) at index n for each of
// literalSizes up to most, the other indexes empty (piece never asks for them).
func bySize(most int, text func(n int) string) []string {
	out := make([]string, most+1)
	for _, n := range literalSizes {
		if n <= most {
			out[n] = text(n)
		}
	}
	return out
}

// piece is how many of n jobs to claim in one statement: n above literalLimitMax (its limit is
// bound), else the largest of literalSizes not above it.
func piece(n int) int {
	if n > literalLimitMax {
		return n
	}
	p := 1
	for _, s := range literalSizes {
		if s > n {
			break
		}
		p = s
	}
	return p
}

// byLimit is one statement with a ":limit" parameter, and its texts with a limit of
// literalSizes written in, each made the first time a claim of that size asks for it.
type byLimit struct {
	query string
	mu    sync.Mutex
	texts map[int]string
}

func newByLimit(query string) *byLimit {
	if !strings.Contains(query, ":limit") {
		panic("sqlite: byLimit of a statement without :limit") // a mistake of the build
	}
	return &byLimit{query: query, texts: make(map[int]string, len(literalSizes))}
}

// limited returns the statement for limit n with args, to which it adds :limit when the limit
// is not one of literalSizes.
func (b *byLimit) limited(n int, args ...any) (string, []any) {
	if n < 1 || n > literalLimitMax || piece(n) != n {
		return b.query, append(args, sql.Named("limit", n))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	text, ok := b.texts[n]
	if !ok {
		text = strings.ReplaceAll(b.query, ":limit", strconv.Itoa(n))
		b.texts[n] = text
	}
	return text, args
}
