package sqlite

import (
	"strings"

	"github.com/rotahq/rota/store"
)

// listFilters is List's WHERE terms for p's filters, the cursor aside. p has passed Check.
func listFilters(p store.ListParams) (where []string, args []any) {
	add := func(term string, vs ...any) {
		where = append(where, term)
		args = append(args, vs...)
	}
	if len(p.States) > 0 {
		add(`state IN (SELECT value FROM json_each(?))`, jsonText(p.States))
	}
	if p.Queue != "" {
		add(`queue = ?`, p.Queue)
	}
	if p.Kind != "" {
		add(`kind = ?`, p.Kind)
	}
	if p.Workflow != "" {
		add(`workflow = ?`, p.Workflow)
	}
	if p.Tag != "" {
		add(`EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)`, p.Tag)
	}
	if p.Schedule != "" {
		add(`schedule = ?`, p.Schedule)
	}
	if p.Owner != "" {
		add(`owner = ?`, p.Owner)
	}
	if p.ArgsContains != "" {
		add(`instr(args, ?) > 0`, p.ArgsContains)
	}
	if p.ArgsPath != "" {
		segs, _ := p.ArgsSegments()
		path := argsPath(segs)
		// json_extract gives SQL values, so 42 matches 42.0 and "1" does not match 1; booleans
		// come out as 1 and 0, hence the check that both sides are booleans or neither is.
		// Only a scalar matches: json_extract gives an object or array as its JSON text, which a
		// string value could equal. Args SQLite's JSON parser refuses (nested deeper than it
		// goes) match nothing, rather than failing the whole List.
		add(`CASE WHEN json_valid(args) THEN json_type(args, ?) IN ('integer', 'real', 'text', 'true', 'false') AND
			json_extract(args, ?) = json_extract(?, '$') AND
			(json_type(args, ?) IN ('true', 'false')) = (json_type(?) IN ('true', 'false')) END`,
			path, path, p.ArgsValue, path, p.ArgsValue)
	}
	if !p.CreatedAfter.IsZero() {
		add(`created_at >= ?`, p.CreatedAfter.UnixMicro())
	}
	if !p.CreatedBefore.IsZero() {
		add(`created_at < ?`, p.CreatedBefore.UnixMicro())
	}
	return where, args
}

// argsPath is segs as an SQLite JSON path of quoted object labels, so that a key such as "0" or
// "a[1]" names a key and not an array element.
func argsPath(segs []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range segs {
		b.WriteString(`."`)
		b.WriteString(s)
		b.WriteString(`"`)
	}
	return b.String()
}
