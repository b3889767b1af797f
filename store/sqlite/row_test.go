package sqlite

import (
	"slices"
	"testing"
)

// depends_on is read by hand; it must read what jsonText writes, and refuse anything else.
func TestParseIDs(t *testing.T) {
	for _, ids := range [][]int64{{1}, {3, 1, 2}, {9007199254740993, 42}} {
		got, err := parseIDs(jsonText(ids))
		if err != nil || !slices.Equal(got, ids) {
			t.Errorf("parseIDs(%s) = %v, %v", jsonText(ids), got, err)
		}
	}
	if got, err := parseIDs("[]"); err != nil || len(got) != 0 {
		t.Errorf("parseIDs([]) = %v, %v", got, err)
	}
	for _, bad := range []string{"1,2]", "[1,2", "[1,,2]", `["1"]`, "{}", ""} {
		if _, err := parseIDs(bad); err == nil {
			t.Errorf("parseIDs(%q) took it", bad)
		}
	}
}
