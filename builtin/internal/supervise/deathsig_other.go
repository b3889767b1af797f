//go:build unix && !linux

package supervise

import "syscall"

// SetParentDeathSignal does nothing where the kernel cannot signal a child when its parent dies:
// the life pipe's end alone tells a supervisor that its node died.
func SetParentDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
