package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store/sqlite"
)

// chaosEnv is one store as the chaos suite uses it: the cluster (the test's own client talks to
// the store directly), the URL the nodes are given (through a cutting proxy where the store is a
// server), and the faults this store can suffer beyond those of the nodes.
type chaosEnv struct {
	kind string
	c    *cluster
	// nodeStore is node id's --store.
	nodeStore func(id string) string
	proxy     *tcpProxy
	// restartStore stops the store server and starts it again after hold; nil for SQLite.
	restartStore func(t *testing.T, hold time.Duration)
	// crashStore stops the store server as a crash would and starts it again after hold; nil
	// where the store has no such crash of its own to test (SQLite, Redis).
	crashStore func(t *testing.T, hold time.Duration)
	// fillDisk fills the disk of a SQLite store and returns what empties it; nil where the test
	// cannot mount a small tmpfs of its own (not root).
	fillDisk func(t *testing.T) (heal func())
	// failover promotes the store's replica and says what it did; nil without a replica.
	failover func(t *testing.T) string
}

// newChaosEnv sets up a store of kind sqlite, postgres or redis for the suite. The servers are
// private to the test (it restarts them), on loopback, as is every connection.
func newChaosEnv(t *testing.T, kind string) *chaosEnv {
	t.Helper()
	switch kind {
	case "sqlite":
		return sqliteChaosEnv(t)
	case "postgres":
		s := startPostgres(t)
		env := serverChaosEnv(t, kind, s.port, newCluster(t, s.url), s.stop, s.start)
		env.crashStore = downFor(s.crash, s.start)
		return env
	case "redis":
		return redisChaosEnv(t)
	}
	t.Fatalf("no chaos store %q", kind)
	return nil
}

// serverChaosEnv is the env of a store server of the test's own on port: the nodes reach it
// through a proxy, and a restart is stop, the fault's hold, start.
func serverChaosEnv(t *testing.T, kind string, port int, c *cluster, stop, start func(*testing.T)) *chaosEnv {
	t.Helper()
	p := startProxy(t, "127.0.0.1:"+strconv.Itoa(port))
	return &chaosEnv{kind: kind, c: c, proxy: p,
		nodeStore:    func(id string) string { return viaProxy(t, c.nodeStore(id), p) },
		restartStore: downFor(stop, start)}
}

// redisChaosEnv is a primary and a replica, each persisting every write (appendfsync always),
// behind the proxy: nodes, the test's client and its checks all reach whichever is primary
// through it. Every write of the nodes waits for the replica (wait_replicas=1), so a failover
// loses no write a node was told had succeeded. A restart restarts the primary; a failover
// promotes the replica, points the proxy at it and makes the old primary its replica.
func redisChaosEnv(t *testing.T) *chaosEnv {
	t.Helper()
	servers := [2]*redisServer{startRedis(t)}
	servers[1] = startRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(servers[0].port))
	primary := 0
	p := startProxy(t, "127.0.0.1:"+strconv.Itoa(servers[0].port))
	c := newRedisCluster(t, "redis://"+p.addr()+"/0")
	env := &chaosEnv{kind: "redis", c: c, proxy: p,
		nodeStore: func(id string) string {
			return c.nodeStore(id) + "&wait_replicas=1&wait_timeout=2s"
		},
		restartStore: downFor(
			func(t *testing.T) { servers[primary].stop(t) },
			func(t *testing.T) { servers[primary].start(t) })}
	env.failover = func(t *testing.T) string {
		old, next := servers[primary], servers[1-primary]
		ctx := t.Context()
		nc, oc := redistest.Client(t, next.url), redistest.Client(t, old.url)
		// No client writes while the proxy is cut; the replica then catches up with what the
		// primary acknowledged before it is promoted, as a careful failover waits for (the
		// nodes' writes waited for the replica anyway; the test's own inserts did not).
		p.cut(time.Hour)
		caughtUp := eventually(30*time.Second, pollEvery, func() bool { return replicaCaughtUp(ctx, oc, nc) })
		if !caughtUp {
			t.Fatalf("failover: the replica on port %d did not catch up with the primary within 30s:\nprimary:\n%s\nreplica:\n%s",
				next.port, replInfo(ctx, oc), replInfo(ctx, nc))
		}
		if err := nc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
			t.Fatalf("failover: promote the replica: %v", err)
		}
		p.retarget("127.0.0.1:" + strconv.Itoa(next.port))
		p.restore()
		if err := oc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(next.port)).Err(); err != nil {
			t.Fatalf("failover: make the old primary a replica: %v", err)
		}
		next.extra, old.extra = nil, []string{"--replicaof", "127.0.0.1", strconv.Itoa(next.port)} // for restarts
		primary = 1 - primary
		return fmt.Sprintf("Redis failover: port %d promoted, %d its replica", next.port, old.port)
	}
	return env
}

// downFor is a store fault: stop takes the server down and, after the fault's hold (from the
// schedule), start brings it back.
func downFor(stop, start func(*testing.T)) func(*testing.T, time.Duration) {
	return func(t *testing.T, hold time.Duration) {
		stop(t)
		time.Sleep(hold)
		start(t)
	}
}

// viaProxy is the store URL u with its host:port replaced by the proxy's.
func viaProxy(t *testing.T, u string, p *tcpProxy) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("store URL %q: %v", u, err)
	}
	parsed.Host = p.addr()
	return parsed.String()
}

// sqliteChaosEnv puts the database on a tmpfs of 64 MiB that the test mounts, so that it can
// fill the disk; where it cannot mount one, the database is in a temporary directory and the
// disk-full fault is left out (and said so).
func sqliteChaosEnv(t *testing.T) *chaosEnv {
	t.Helper()
	dir := t.TempDir()
	mounted := os.Geteuid() == 0 && exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", dir).Run() == nil
	if mounted {
		t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	} else {
		t.Log("chaos: cannot mount a tmpfs here (not root?): no disk-full fault for SQLite")
	}
	path := filepath.Join(dir, "rota.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatalf("open the test's SQLite store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	c := &cluster{t: t, store: "sqlite:" + path, schema: "sqlite", dir: t.TempDir(),
		client: rota.NewClient(st, &rota.ClientConfig{Logger: quiet})}
	t.Cleanup(c.dumpLogsOnFailure)
	env := &chaosEnv{kind: "sqlite", c: c, nodeStore: func(string) string { return c.store }}
	if mounted {
		env.fillDisk = func(t *testing.T) func() {
			filler := filepath.Join(dir, "filler")
			f, err := os.Create(filler)
			if err != nil {
				t.Fatalf("disk full: %v", err)
			}
			_, err = io.Copy(f, zeros{})
			f.Close()
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("disk full: filling the tmpfs ended with %v, not ENOSPC", err)
			}
			return func() { os.Remove(filler) }
		}
	}
	return env
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// chaosNodeFlags give the nodes short leases, so that the faults' consequences (rescues, leader
// changes, fencing) happen many times within a short run.
// chaosJobLease is the nodes' job lease.
const chaosJobLease = 3 * time.Second

var chaosNodeFlags = []string{
	"--job-lease", chaosJobLease.String(), "--leader-ttl", "3s", "--leader-renew", "1s", "--leader-try", "1s",
	"--rescue-interval", "1s", "--drain-timeout", "10s",
}

// slotQueue is the queue only the nodes of a slot serve (node ids are "n<slot>.<incarnation>"):
// a job put there once the faults stop proves that slot's node still claims.
func slotQueue(id string) string {
	slot, _, _ := strings.Cut(id, ".")
	return slot
}

// startChaosNode starts `rota serve` as node id on env's store (through the proxy) and waits
// until it serves. A node that cannot start while the store is down tries again: after a fault,
// the suite needs its nodes back.
func (env *chaosEnv) startChaosNode(t *testing.T, id string) *node {
	t.Helper()
	c := env.c
	for try := 1; ; try++ {
		args := append([]string{"--store", env.nodeStore(id), "serve", "--node-id", id, "--log-format", "json", "--pass-env", nodeEnv,
			"--queues", "default=8,one=2," + slotQueue(id) + "=1"}, chaosNodeFlags...)
		n := c.spawn(id, args)
		serving := eventually(30*time.Second, pollEvery, func() bool {
			return len(n.records("rota: serving")) > 0 || n.exited()
		})
		if serving && !n.exited() {
			return n
		}
		n.cleanup()
		if try == 5 {
			t.Fatalf("node %s did not start in %d tries:\n%s", id, try, n.out.String())
		}
	}
}

// stopGracefully sends SIGTERM and waits for the node to finish its jobs and exit.
func (n *node) stopGracefully(t *testing.T) {
	t.Helper()
	n.signal(t, syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(45 * time.Second):
		t.Fatalf("node %s still running 45s after SIGTERM:\n%s", n.id, tail(n.out.String(), 40))
	}
}

// replicaCaughtUp says whether replica holds every write primary has: its link is up, it follows
// primary's replication history (a restarted primary without its history starts a new one at
// offset 0, below what the replica had read of the old one, so offsets alone would say yes
// before the replica has synced again) and it has read up to primary's offset.
func replicaCaughtUp(ctx context.Context, primary, replica *goredis.Client) bool {
	p, r := replInfo(ctx, primary), replInfo(ctx, replica)
	if r["master_link_status"] != "up" || r["master_sync_in_progress"] != "0" { // nil (unreadable) reads as empty
		return false
	}
	if p["master_replid"] == "" || p["master_replid"] != r["master_replid"] {
		return false
	}
	want, err1 := strconv.ParseInt(p["master_repl_offset"], 10, 64)
	got, err2 := strconv.ParseInt(r["slave_repl_offset"], 10, 64)
	return err1 == nil && err2 == nil && got >= want
}

// replInfo is INFO replication as fields; nil when it cannot be read.
func replInfo(ctx context.Context, c *goredis.Client) map[string]string {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil
	}
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}
