//go:build !linux

package e2e

import "os/exec"

// setDeathSignal does nothing where the kernel has no parent-death signal; the tests' cleanups
// still kill every node they start.
func setDeathSignal(*exec.Cmd) {}
