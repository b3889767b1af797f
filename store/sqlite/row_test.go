package sqlite

import (
	"slices"
	"strings"
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

// claimedColumns is jobColumns with NULL in the places of exactly the columns scanClaimed fills
// in: the two lists are kept in step by hand, and rowScan reads both by position.
func TestClaimedColumnsFollowJobColumns(t *testing.T) {
	split := func(list string) []string {
		var out []string
		for _, c := range strings.Split(list, ",") {
			out = append(out, strings.TrimSpace(c))
		}
		return out
	}
	all, claimed := split(jobColumns), split(claimedColumns)
	if len(all) != len(claimed) || len(all) != len(rowScan{}.v) {
		t.Fatalf("%d job columns, %d claimed columns, %d scanned", len(all), len(claimed), len(rowScan{}.v))
	}
	filled := []string{"state", "attempted_at", "owner", "lease_until", "attempted_by"}
	var nulls []string
	for i, c := range claimed {
		switch {
		case c == "NULL":
			nulls = append(nulls, all[i])
		case c != all[i]:
			t.Errorf("claimed column %d is %s, job column %s", i, c, all[i])
		}
	}
	if !slices.Equal(nulls, filled) {
		t.Errorf("claims leave %v NULL, scanClaimed fills in %v", nulls, filled)
	}
}
