package rota

import "testing"

// badEscape finds the escapes no store keeps as text, and only those: an escaped backslash
// before "u0000" is text, and a surrogate pair is one character.
func TestBadEscape(t *testing.T) {
	for _, c := range []struct {
		json, want string
	}{
		{`{"a":"plain"}`, ""},
		{`{"a":"\\u0000"}`, ""},
		{`{"a":"\\\u0000"}`, `\u0000`},
		{`{"a":"\u0000"}`, `\u0000`},
		{`{"a":"\ud83d\ude00 and \u00e9"}`, ""},
		{`{"a":"\ud83d"}`, `\ud83d`},
		{`{"a":"\ud83d\u0041"}`, `\ud83d`},
		{`{"a":"\ude00"}`, `\ude00`},
		{`{"a\n":"\"\u00"}`, ""},
	} {
		got, bad := badEscape([]byte(c.json))
		if got != c.want || bad != (c.want != "") {
			t.Errorf("badEscape(%s) = %q, %v; want %q", c.json, got, bad, c.want)
		}
	}
}
