package memory

import (
	"errors"
	"runtime"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := parse([]byte("MemTotal:       24000000 kB\nMemFree:          100000 kB\nMemAvailable:    2000000 kB\n"))
	if err != nil || got != 2000000*1024 {
		t.Fatalf("parse = %d, %v", got, err)
	}
	if _, err := parse([]byte("MemTotal: 1 kB\n")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("no MemAvailable line: %v", err)
	}
}

func TestAvailableOnThisMachine(t *testing.T) {
	got, err := Available()
	if runtime.GOOS != "linux" {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("non-linux: %v", err)
		}
		return
	}
	if err != nil || got == 0 {
		t.Fatalf("Available = %d, %v", got, err)
	}
}
