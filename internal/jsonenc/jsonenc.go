// Package jsonenc encodes JSON as rota stores and shows it: as json.Marshal does, but with <, >
// and & as they are. json.Marshal writes them as \u003c, \u003e and \u0026 for embedding in
// HTML, so a shell command's `a > b && c` would be stored, listed and shown in that form.
package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// indentSlack is how much longer than twice its length Indent lets JSON grow before it shows it
// as it is.
const indentSlack = 64 << 10

// Indent is b indented for reading as json.Indent indents it, with prefix before every line
// but the first and two spaces a level, or b as it is when it does not parse or when indenting
// would make it more than twice as long (and 64 KiB): every level of nesting adds its indent
// to every line within it, so a few KiB nested thousands deep, which a producer may write into
// args, would indent to hundreds of MiB on a page or a terminal.
func Indent(b []byte, prefix string) string {
	if IndentedSize(b, prefix) > 2*len(b)+indentSlack {
		return string(b)
	}
	var out bytes.Buffer
	if json.Indent(&out, b, prefix, "  ") != nil {
		return string(b)
	}
	return out.String()
}

// IndentedSize is at least how long json.Indent(b, prefix, "  ") makes JSON b, counted without
// writing it (a bracket left empty is counted as if it were not).
func IndentedSize(b []byte, prefix string) int {
	size, depth, inString, escaped := len(b), 0, false, false
	line := func() int { return 1 + len(prefix) + 2*depth }
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			size += line()
		case c == '}' || c == ']':
			depth = max(depth-1, 0)
			size += line()
		case c == ',':
			size += line()
		case c == ':':
			size++
		}
	}
	return size
}
