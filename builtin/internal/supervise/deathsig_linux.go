package supervise

import "syscall"

// SetParentDeathSignal has the kernel send sig to the process attr starts when the thread that
// started it ends, which for a process's main thread is when the process ends, however it ends
// (SIGKILL, out of memory).
func SetParentDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) { attr.Pdeathsig = sig }
