package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rotahq/rota/internal/jsonenc"
)

// jsonOutput reports whether -o json was asked for: scripts get JSON, people get tables.
func (a *app) jsonOutput() bool { return a.output == "json" }

// printJSON writes v as indented JSON, one value per command, so `| jq` works; on one line
// when indenting would make it too large (jsonenc.Indent): args nested deep, say.
func (a *app) printJSON(v any) error {
	b, err := jsonenc.Marshal(v) // a terminal or jq, not an HTML page: no HTML escapes
	if err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	if _, err := fmt.Fprintln(a.stdout, jsonenc.Indent(b, "")); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// newTable returns a writer that aligns tab-separated columns; Flush it when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// fmtTime shows a time in the local zone to the second, or "-" for none.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// prettyJSON indents raw JSON for reading, leaving it as it is when it is not valid or would
// grow too large (jsonenc.Indent).
func prettyJSON(raw []byte, indent string) string { return jsonenc.Indent(raw, indent) }

// printable shows the control characters of text others wrote (a program's stderr, a server's
// status line) as escapes, so that they cannot drive the terminal: move the cursor, clear what
// came before, set the window title. Newlines and tabs stay.
func printable(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == utf8.RuneError)
}

// oneLine returns the first line of s, cut to max runes, for a table cell.
func oneLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	s = printable(strings.ReplaceAll(s, "\t", " "))
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max-1]) + "…"
	}
	return s
}

// orDash shows an empty value as "-" so table columns stay aligned.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
