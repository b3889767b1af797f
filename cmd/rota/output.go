package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// jsonOutput reports whether -o json was asked for: scripts get JSON, people get tables.
func (a *app) jsonOutput() bool { return a.output == "json" }

// printJSON writes v as indented JSON, one value per command, so `| jq` works.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a terminal or jq, not an HTML page
	if err := enc.Encode(v); err != nil {
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

// prettyJSON indents raw JSON for reading, leaving it as it is when it is not valid.
func prettyJSON(raw []byte, indent string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, indent, "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// oneLine returns the first line of s, cut to max runes, for a table cell.
func oneLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	s = strings.ReplaceAll(s, "\t", " ")
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
