// Package supervise is the supervisor of one exec program: the process a node starts, from its
// own binary, to run a program and to kill every process of it when the program ends or the node
// dies. Package builtin holds the node's side; this package holds the supervisor and the
// protocol the two speak over their pipes.
//
// It is a package of its own, importing the standard library only, so that its init — which
// turns the process into a supervisor — runs before the packages of the rest of the binary
// (stores, metrics, tracing) spend their own init time: a supervisor starts for every exec job,
// and that start is most of what supervision costs.
package supervise
