//go:build unix && !linux

package builtin

import "syscall"

// setParentDeathSignal does nothing where the kernel cannot signal a child when its parent dies:
// a program outlives a node killed with SIGKILL there.
func setParentDeathSignal(*syscall.SysProcAttr) {}
