package main

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A signal while `rota serve` opens the store ends it: a store that accepts connections and
// never answers would otherwise hold Ctrl-C (and a process manager's SIGTERM) for as long as
// the store's connect timeout, 2 minutes for PostgreSQL.
func TestServeStopsOnSignalWhileOpeningTheStore(t *testing.T) {
	bin := rotaBinary(t)
	// A "PostgreSQL server" that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	}()

	var log syncBuffer
	cmd := exec.Command(bin, "--store", "postgres://rota@"+ln.Addr().String()+"/rota?sslmode=disable", "serve")
	cmd.Env = append(os.Environ(), "ROTA_STORE=")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	// The node is opening the store: its signal handler is in place (it is set up before).
	select {
	case c := <-accepted:
		accepted <- c
	case err := <-done:
		t.Fatalf("serve exited before connecting: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve never connected:\n%s", log.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still running 10s after SIGTERM while it opened the store:\n%s", log.String())
	}
}
