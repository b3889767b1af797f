package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidList is wrapped by List's error for ListParams that Check refuses, so that the CLI
// and the HTTP API can tell a caller's mistake from a store's failure.
var ErrInvalidList = errors.New("invalid list filter")

// Check reports malformed filters: an ArgsPath with an empty segment or a key holding a double
// quote, one of ArgsPath and ArgsValue without the other, an ArgsValue that is not a JSON
// string, number or boolean, and a CreatedAfter later than CreatedBefore. Every store's List
// calls it first, so that no store answers a question the others refuse.
func (p ListParams) Check() error {
	for _, f := range []struct{ name, v string }{
		{"queue", p.Queue}, {"kind", p.Kind}, {"workflow", p.Workflow}, {"tag", p.Tag},
		{"schedule", p.Schedule}, {"owner", p.Owner}, {"args contains", p.ArgsContains},
		{"args path", p.ArgsPath}, {"args value", p.ArgsValue},
	} {
		// Every store keeps these as text that holds neither: no job can match, and PostgreSQL
		// fails a query that carries one.
		if !Storable(f.v) {
			return fmt.Errorf("%w: %s %q is not valid UTF-8 text without NUL", ErrInvalidList, f.name, f.v)
		}
	}
	if p.ArgsPath != "" || p.ArgsValue != "" {
		if _, err := p.ArgsSegments(); err != nil {
			return err
		}
		if err := checkScalar(p.ArgsValue); err != nil {
			return err
		}
	}
	if !p.CreatedAfter.IsZero() && !p.CreatedBefore.IsZero() && p.CreatedAfter.After(p.CreatedBefore) {
		return fmt.Errorf("%w: created after %s is later than created before %s", ErrInvalidList,
			p.CreatedAfter.Format("2006-01-02T15:04:05Z07:00"), p.CreatedBefore.Format("2006-01-02T15:04:05Z07:00"))
	}
	return nil
}

// Storable reports whether s is text every store keeps: valid UTF-8 without NUL (PostgreSQL's
// text holds nothing else, and fails a query that carries it). Nothing is named by other text.
func Storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// ArgsSegments splits ArgsPath into its object keys.
func (p ListParams) ArgsSegments() ([]string, error) {
	if p.ArgsPath == "" {
		return nil, fmt.Errorf("%w: args value %q without an args path", ErrInvalidList, p.ArgsValue)
	}
	segs := strings.Split(p.ArgsPath, ".")
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("%w: args path %q has an empty segment", ErrInvalidList, p.ArgsPath)
		}
		// SQLite's JSON paths quote a key in double quotes and cannot escape one inside it.
		if strings.Contains(s, `"`) {
			return nil, fmt.Errorf("%w: args path %q: a key cannot hold a double quote", ErrInvalidList, p.ArgsPath)
		}
	}
	return segs, nil
}

// checkScalar accepts the JSON scalars an args path can be compared with. null is refused: stores
// cannot tell a null from a missing key alike.
func checkScalar(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: an args path needs a value", ErrInvalidList)
	}
	var x any
	if err := json.Unmarshal([]byte(v), &x); err != nil {
		return fmt.Errorf("%w: args value %q is not JSON (quote strings: '\"acme\"')", ErrInvalidList, v)
	}
	switch x.(type) {
	case string, float64, bool:
		return nil
	}
	return fmt.Errorf("%w: args value %s is not a JSON string, number or boolean", ErrInvalidList, v)
}
