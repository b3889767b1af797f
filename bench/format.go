package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints results as an aligned table, one row per result. The latency columns mean
// what the last column says: an insert call's duration for the insert workloads, the wait from
// insert to handler start for the latency workload.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tworkload\tjobs\tjobs/s\tcpu/job\tp50\tp90\tp99\tmax\t  latency of")
	for _, r := range results {
		lat := [4]string{"-", "-", "-", "-"}
		if p := r.Latency; p != nil {
			lat = [4]string{FormatDuration(p.P50), FormatDuration(p.P90), FormatDuration(p.P99), FormatDuration(p.Max)}
		}
		of := r.LatencyOf
		if r.Err != "" {
			of = "FAILED: " + r.Err
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t  %s\n", r.System, r.Label(), r.Jobs,
			FormatRate(r.JobsPerSec), FormatCPU(r.CPUPerJob), lat[0], lat[1], lat[2], lat[3], of)
	}
	return tw.Flush()
}

// WriteJSON prints results as a JSON array, for scripts.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// FormatRate prints a rate with thousands separators and no false precision.
func FormatRate(perSec float64) string {
	if perSec <= 0 {
		return "-"
	}
	n := int64(perSec + 0.5)
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// FormatCPU prints a job's CPU time in microseconds, or "-" when it was not measured.
func FormatCPU(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

// FormatDuration prints a latency in milliseconds, with two decimals below 10 ms where the
// difference matters.
func FormatDuration(d time.Duration) string {
	m := ms(d)
	if m < 10 {
		return fmt.Sprintf("%.2fms", m)
	}
	return fmt.Sprintf("%.0fms", m)
}

// Label is the workload's name, with the jobs the table held before it when there were any.
func (r Result) Label() string {
	var held []string
	if r.Queued > 0 {
		held = append(held, FormatCount(r.Queued)+" queued")
	}
	if r.Retained > 0 {
		held = append(held, FormatCount(r.Retained)+" retained")
	}
	if len(held) == 0 {
		return string(r.Workload)
	}
	return string(r.Workload) + " (" + strings.Join(held, ", ") + ")"
}

// FormatCount prints a count of jobs briefly: 10k, 1M, 2.5M.
func FormatCount(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64), ".0") + "M"
	case n >= 1_000 && n%100 == 0:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64), ".0") + "k"
	}
	return strconv.Itoa(n)
}

// WriteWindows prints a soak's windows as a table: one row per window, after the summary row
// WriteTable printed.
func WriteWindows(w io.Writer, r Result) error {
	if len(r.Windows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s %s: at\tstarted\tp50\tp99\tmax\trss\tgo\theap\tstore\t\n", r.System, r.Workload)
	for _, win := range r.Windows {
		lat := [3]string{"-", "-", "-"}
		if p := win.Latency; p != nil {
			lat = [3]string{FormatDuration(p.P50), FormatDuration(p.P99), FormatDuration(p.Max)}
		}
		fmt.Fprintf(tw, "%v\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", win.At.Round(time.Second), win.Started,
			lat[0], lat[1], lat[2], formatBytes(win.RSS), formatBytes(win.GoBytes), formatBytes(win.GoHeap),
			formatBytes(win.StoreBytes))
	}
	return tw.Flush()
}

// formatBytes prints a size in MiB, "-" when unknown.
func formatBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}
