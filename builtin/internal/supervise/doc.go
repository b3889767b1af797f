// Package supervise is the exec host: the one process a node starts, from its own binary, to run
// every program of its exec jobs and to kill every process of them when a program ends or the
// node dies. Package builtin holds the node's side; this package holds the host and the protocol
// the two speak over their socket.
//
// One host serves all of a node's exec jobs, started at the first: starting a process of this
// binary for every job cost four fifths of the exec kind's throughput. It is a package of its
// own, importing the standard library only, so that its init — which turns the process into the
// host — runs before the packages of the rest of the binary (stores, metrics, tracing) spend
// their own init time.
package supervise
