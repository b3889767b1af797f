package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// Job errors hold text others wrote: a program's stderr, a remote server's status line. What
// the CLI prints of them shows control characters as escapes, so that none reaches the
// operator's terminal to drive it (a window title, a cleared line hiding what came before, OSC
// 52 clipboard writes...).
func TestJobErrorsDoNotReachTheTerminalRaw(t *testing.T) {
	e := newEnv(t)

	// A webhook receiver outside the operator's control answers with ESC in its status line.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				_, _ = c.Write([]byte("HTTP/1.1 500 Oops\x1b]0;owned-by-webhook\x07\x1b[2K\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	startServe(t, e, "--http-allow", "127.0.0.1")

	e.run("enqueue", "exec", "--max-attempts", "1", "--wait", "--timeout", "30s", "--",
		"sh", "-c", `printf 'disk \033]0;owned-by-program\007\033[2Kfull' >&2; exit 1`).fails(t, "ended discarded")
	e.run("enqueue", "http", "--max-attempts", "1", "--wait", "--timeout", "30s",
		"--args", `{"url":"http://`+ln.Addr().String()+`/hook"}`).fails(t, "ended discarded")

	for _, args := range [][]string{{"jobs", "list"}, {"jobs", "show", "1"}, {"jobs", "show", "2"}} {
		r := e.run(args...).ok(t)
		if i := strings.IndexAny(r.stdout, "\x1b\x07\r"); i >= 0 {
			lo := max(0, i-40)
			t.Errorf("rota %s writes a raw control character to the terminal: %q", strings.Join(args, " "), r.stdout[lo:min(len(r.stdout), i+30)])
		}
	}
}
