package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store/redis"

	"github.com/rotahq/rota/internal/rediskeys"
)

// sharedRedis returns the URL of the Redis server the test suite shares (ROTA_TEST_REDIS_URL or
// 127.0.0.1:6379), skipping (or in CI failing) t when it does not answer.
func sharedRedis(t *testing.T) string {
	t.Helper()
	needBinary(t)
	return redistest.URL(t)
}

// newRedisCluster migrates a fresh namespace on the Redis server at base with `rota migrate`, as
// an operator would, and opens the test's client on it. The namespace's keys, and only those, are
// deleted when the test ends, after its nodes are gone. Nodes are added with start.
func newRedisCluster(t *testing.T, base string) *cluster {
	t.Helper()
	ns := redistest.Namespace(t, base)
	c := &cluster{t: t, store: redistest.StoreURL(t, base, ns), schema: ns, dir: t.TempDir(), rdb: redistest.Client(t, base)}
	c.rota("migrate")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := redis.Open(ctx, c.store, redis.WithLogger(quiet))
	if err != nil {
		t.Fatalf("open the test's store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	c.client = rota.NewClient(st, &rota.ClientConfig{Logger: quiet})
	t.Cleanup(c.dumpLogsOnFailure)
	return c
}

// redisSessions counts the connections to the Redis server named for node id (client_name).
func (c *cluster) redisSessions(ctx context.Context, t *testing.T, id string) int {
	t.Helper()
	list, err := c.rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatalf("count node %s's connections: %v", id, err)
	}
	n := 0
	for line := range strings.Lines(list) {
		for _, f := range strings.Fields(line) {
			if f == "name="+c.applicationName(id) {
				n++
			}
		}
	}
	return n
}

// namespaceKeys returns the keys of the cluster's namespace that are in the server now.
func (c *cluster) namespaceKeys(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := c.rdb.Keys(ctx, rediskeys.Prefix(c.schema)+"*").Result()
	if err != nil {
		t.Fatalf("list the namespace's keys: %v", err)
	}
	return keys
}

// redisServer is a private redis-server of one test, persisting every write to its append-only
// file before answering (appendfsync always), so the test may stop and start it on the same port
// and directory and find every acknowledged write again.
type redisServer struct {
	bin  string
	dir  string
	port int
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	// extra are more arguments of the server (--replicaof for a replica).
	extra []string
}

// startRedis starts a private redis-server on a free port of 127.0.0.1 in a temporary directory,
// and kills it when the test ends. Without redis-server the test skips, or fails in CI.
func startRedis(t *testing.T, extra ...string) *redisServer {
	t.Helper()
	needBinary(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server is not installed: %v", err)
	}
	s := &redisServer{bin: bin, dir: t.TempDir(), port: freePort(t), extra: extra}
	s.url = fmt.Sprintf("redis://127.0.0.1:%d/0", s.port)
	s.start(t)
	t.Cleanup(func() {
		if s.cmd != nil && !s.exited() {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// start runs the server (again) on its port and directory and waits until it answers PING: with
// AOF on, it has loaded every write it acknowledged before it stopped.
func (s *redisServer) start(t *testing.T) {
	t.Helper()
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--maxmemory-policy", "noeviction",
		"--repl-diskless-sync-delay", "0", // a replica syncs at once after a restart, not 5 s later
		"--logfile", filepath.Join(s.dir, "redis.log")}
	s.cmd = exec.Command(s.bin, append(args, s.extra...)...)
	setDeathSignal(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	s.done = done
	go func(cmd *exec.Cmd) { _ = cmd.Wait(); close(done) }(s.cmd)
	c := redistest.Client(t, s.url)
	var err error
	up := eventually(30*time.Second, pollEvery, func() bool {
		if s.exited() {
			t.Fatalf("redis-server on port %d exited at start:\n%s", s.port, s.log())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = c.Ping(ctx).Err()
		return err == nil
	})
	if !up {
		t.Fatalf("redis-server on port %d did not answer within 30s: %v\n%s", s.port, err, s.log())
	}
}

// stop sends SIGTERM, on which Redis flushes its append-only file and exits, and waits until
// the process is gone.
func (s *redisServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM to redis-server: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("redis-server still running 30s after SIGTERM:\n%s", s.log())
	}
}

func (s *redisServer) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// log is the server's log file, for failure messages.
func (s *redisServer) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}
