// Package memory reads how much memory the machine can still give without swapping, so a node can
// stop taking work before the OOM killer takes it instead.
package memory

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// ErrUnsupported is returned where the platform does not say how much memory is available.
var ErrUnsupported = errors.New("memory: available memory is not known on this platform")

// Available returns MemAvailable from /proc/meminfo, in bytes: the kernel's estimate of what can be
// allocated without swapping, which counts reclaimable cache (unlike MemFree).
func Available() (uint64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, ErrUnsupported
	}
	return parse(data)
}

func parse(meminfo []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 2 || string(fields[0]) != "MemAvailable:" {
			continue
		}
		kb, err := strconv.ParseUint(string(fields[1]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("memory: MemAvailable %q: %w", fields[1], err)
		}
		return kb * 1024, nil
	}
	return 0, ErrUnsupported
}
