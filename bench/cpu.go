package bench

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/stat: 1/100 s on every Linux architecture Go supports.
const userHZ = 100

// machineBusy returns the CPU time every process of the machine has used since boot: user, nice,
// system, irq and softirq time; not idle, iowait or steal (time the hypervisor gave elsewhere). It
// is machine-wide on purpose: a job's cost is spread over the system's own process, its database
// server and the kernel, and all of them count. ok is false where there is no /proc/stat.
func machineBusy() (busy time.Duration, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	// cpu user nice system idle iowait irq softirq steal ...
	if len(fields) < 8 || string(fields[0]) != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(string(fields[i]), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

// stopwatch measures one workload's interval: wall time and the machine's CPU time.
type stopwatch struct {
	begin  time.Time
	busy   time.Duration
	busyOK bool
}

func startWatch() stopwatch {
	busy, ok := machineBusy()
	return stopwatch{begin: time.Now(), busy: busy, busyOK: ok}
}

// stop records the interval since startWatch in res.
func (w stopwatch) stop(res *Result) {
	res.Elapsed, res.CPU = w.read()
}

// read returns the interval's wall time and the machine's CPU time (0 where it cannot be read).
func (w stopwatch) read() (elapsed, cpu time.Duration) {
	elapsed = time.Since(w.begin)
	if busy, ok := machineBusy(); ok && w.busyOK {
		cpu = busy - w.busy
	}
	return elapsed, cpu
}
