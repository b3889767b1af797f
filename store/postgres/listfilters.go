package postgres

import (
	"github.com/rotahq/rota/store"
)

// listFilters is List's WHERE terms for the filters no index serves; arg binds a parameter and
// returns its placeholder. p has passed Check.
func listFilters(p store.ListParams, arg func(any) string) []string {
	var where []string
	if p.Tag != "" {
		where = append(where, arg(p.Tag)+" = ANY (tags)")
	}
	if p.Schedule != "" {
		where = append(where, "schedule = "+arg(p.Schedule))
	}
	if p.Owner != "" {
		where = append(where, "owner = "+arg(p.Owner))
	}
	if p.ArgsContains != "" {
		// args is json, not jsonb: its text is the text inserted, as in the other stores.
		where = append(where, "strpos(args::text, "+arg(p.ArgsContains)+") > 0")
	}
	if p.ArgsPath != "" {
		segs, _ := p.ArgsSegments()
		// Compared as jsonb, so that 42 matches 42.0 and "1" does not match 1. The type checks
		// keep a segment from indexing an array: segments name object keys, as in the other stores.
		path := arg(segs)
		where = append(where, "json_typeof(args #> "+path+"::text[]) IN ('string', 'number', 'boolean')",
			"(args #> "+path+"::text[])::jsonb = "+arg(p.ArgsValue)+"::jsonb")
		where = append(where, "json_typeof(args) = 'object'")
		for i := 1; i < len(segs); i++ {
			where = append(where, "json_typeof(args #> "+arg(segs[:i])+"::text[]) = 'object'")
		}
	}
	if !p.CreatedAfter.IsZero() {
		where = append(where, "created_at >= "+arg(p.CreatedAfter))
	}
	if !p.CreatedBefore.IsZero() {
		where = append(where, "created_at < "+arg(p.CreatedBefore))
	}
	return where
}
