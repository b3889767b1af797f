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
