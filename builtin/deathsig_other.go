//go:build unix && !linux

package builtin

import "syscall"

// setParentDeathSignal does nothing where the kernel cannot signal a child when its parent dies:
// the life pipe's end alone tells a supervisor that its node died.
func setParentDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
