package builtin

import "syscall"

// setParentDeathSignal has the kernel kill the program if its node dies without stopping it
// (SIGKILL, out of memory). Its job is rescued and runs again elsewhere; the old run must not go
// on beside it. Only the program itself gets the signal, not what it started.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
