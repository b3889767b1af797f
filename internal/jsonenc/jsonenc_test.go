package jsonenc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// IndentedSize is never below what json.Indent writes, and Indent indents what stays small.
func TestIndentedSizeBoundsIndent(t *testing.T) {
	for _, in := range []string{
		`{"a":[1,2,{"b":"x,y:[z]"}],"c":{}}`, `[]`, `"s"`, `[[[[1]]]]`, `{"k":"\"],["}`,
		strings.Repeat("[", 50) + strings.Repeat("]", 50),
	} {
		for _, prefix := range []string{"", "  "} {
			var out bytes.Buffer
			if err := json.Indent(&out, []byte(in), prefix, "  "); err != nil {
				t.Fatal(err)
			}
			if got := IndentedSize([]byte(in), prefix); got < out.Len() {
				t.Errorf("IndentedSize(%s, %q) = %d, json.Indent wrote %d", in, prefix, got, out.Len())
			}
			if got := Indent([]byte(in), prefix); got != out.String() {
				t.Errorf("Indent(%s) = %q, want %q", in, got, out.String())
			}
		}
	}
}

// JSON nested thousands deep is shown as it is: indented, 10 KiB of it would be 10 MiB.
func TestIndentLeavesDeepNestingAsItIs(t *testing.T) {
	nest := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	in := `{"a":[` + strings.Repeat(nest+",", 4) + nest + `]}`
	if got := Indent([]byte(in), ""); got != in {
		t.Fatalf("Indent of %d bytes nested 1,000 deep wrote %d bytes", len(in), len(got))
	}
}
