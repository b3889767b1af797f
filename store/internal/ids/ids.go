// Package ids holds what the stores do alike with lists of job ids.
package ids

// Unique is ids without repeats, each kept where it first appears. A job's dependencies are a
// set in the order given: waiting twice for one job is waiting for it once. A fan-in's last step
// names thousands, so repeats are found with a map, not by scanning what was kept.
func Unique(ids []int64) []int64 {
	if len(ids) < 2 {
		return ids
	}
	seen := make(map[int64]struct{}, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}
