package builtin

import "syscall"

// setParentDeathSignal has the kernel send sig to the process attr starts when the thread that
// started it ends, which for a process's main thread is when the process ends, however it ends
// (SIGKILL, out of memory).
func setParentDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) { attr.Pdeathsig = sig }
