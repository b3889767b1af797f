//go:build !linux

package main

// hideFromSameUser does nothing outside Linux, which has no PR_SET_DUMPABLE.
func hideFromSameUser() error { return nil }
