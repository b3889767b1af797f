package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards connections from a loopback port to a store's, and can cut them: what a
// network partition or a load balancer's reset does to every client at once. Only loopback
// traffic: the test listens on 127.0.0.1 and dials the store it started there.
type tcpProxy struct {
	ln net.Listener

	mu sync.Mutex
	// target is where connections go: a failover moves it to the promoted replica.
	target string
	// conns holds both ends of every forwarded connection, to close on cut.
	conns map[net.Conn]bool
	// downUntil refuses (accepts and closes at once) every connection until then.
	downUntil time.Time
}

// startProxy listens on a free loopback port and forwards to target (host:port) until the
// test ends.
func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.cut(0)
	})
	return p
}

// addr is the proxy's host:port, which the nodes are given as the store's.
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed at the test's end
		}
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	p.mu.Lock()
	down := time.Now().Before(p.downUntil)
	p.mu.Unlock()
	if down {
		c.Close()
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	s, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, as a reset would.
		dst.Close()
		src.Close()
	}
	wg.Add(2)
	go pipe(s, c)
	go pipe(c, s)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// cut closes every forwarded connection and refuses new ones for d.
func (p *tcpProxy) cut(d time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downUntil = time.Now().Add(d)
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	return n
}

// restore accepts connections again after a cut. A nil proxy (a store without one) does nothing.
func (p *tcpProxy) restore() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downUntil = time.Time{}
}

// retarget sends the connections made from now on to target.
func (p *tcpProxy) retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}
