package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/store/postgres"
)

// nodeEnv names the variable each `rota serve` process gets with its node id. Programs get
// it through --pass-env, so a job's shell script can say which node ran it.
const nodeEnv = "E2E_NODE"

// cluster is one test's store (its own PostgreSQL schema or Redis namespace) and the `rota serve`
// processes on it.
type cluster struct {
	t *testing.T
	// store is the --store URL of the processes.
	store string
	// client is the test's own client on the same store, for inserting and checking jobs.
	client *rota.Client
	// pool is the client's connection pool, for looking at the server itself (pg_stat_activity);
	// nil on Redis.
	pool *pgxpool.Pool
	// rdb is a plain client of the Redis server, for looking at the server itself (CLIENT LIST);
	// nil on PostgreSQL.
	rdb *goredis.Client
	// schema is the PostgreSQL schema or the Redis namespace: it names the test's connections.
	schema string
	// dir holds the test's files: the job log.
	dir   string
	nodes []*node
}

// newCluster migrates a fresh schema on the PostgreSQL server at base with `rota migrate`, as an
// operator would, and opens the test's client on it. Nodes are added with start.
func newCluster(t *testing.T, base string) *cluster {
	t.Helper()
	schema := pgtest.Schema(t, base)
	c := &cluster{t: t, store: pgtest.StoreURL(t, base, schema), schema: schema, dir: t.TempDir()}
	c.rota("migrate")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, base, postgres.WithSchema(schema), postgres.WithLogger(quiet))
	if err != nil {
		t.Fatalf("open the test's store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	c.client = rota.NewClient(st, &rota.ClientConfig{Logger: quiet})
	c.pool = st.Pool()
	t.Cleanup(c.dumpLogsOnFailure)
	return c
}

// quiet is the logger of the test's own client: during an outage it would only repeat what the
// test checks.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rota runs the binary to its end on the cluster's store and returns its stdout, failing the test
// if it fails.
func (c *cluster) rota(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, rotaBin, append([]string{"--store", c.store}, args...)...)
	cmd.Env = append(os.Environ(), "ROTA_STORE=")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("rota %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// start runs `rota serve --node-id id` with JSON logs and the given flags, waits until it
// serves, and makes sure it is killed when the test ends, failed or not.
func (c *cluster) start(id string, flags ...string) *node {
	c.t.Helper()
	args := append([]string{"--store", c.nodeStore(id), "serve", "--node-id", id, "--log-format", "json", "--pass-env", nodeEnv}, flags...)
	n := c.spawn(id, args)
	n.waitLog(c.t, "rota: serving", 30*time.Second)
	return n
}

// spawn starts the binary with args as node id (its log in the node's buffer, the node's id in
// nodeEnv), adds it to the cluster and kills it when the test ends; it does not wait for it.
func (c *cluster) spawn(id string, args []string) *node {
	c.t.Helper()
	n := &node{id: id, out: &logBuffer{}, done: make(chan struct{})}
	n.cmd = exec.Command(rotaBin, args...)
	n.cmd.Env = append(os.Environ(), "ROTA_STORE=", nodeEnv+"="+id)
	w := c.logWriter(n)
	n.cmd.Stdout, n.cmd.Stderr = w, w
	n.cmd.WaitDelay = 5 * time.Second
	setDeathSignal(n.cmd)
	if err := n.cmd.Start(); err != nil {
		c.t.Fatalf("start node %s: %v", id, err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	c.nodes = append(c.nodes, n)
	c.t.Cleanup(n.cleanup)
	return n
}

// logsEnv names a directory that receives every node's whole log, one file per test and node,
// for a person investigating a failure: the test itself only shows the end of each log.
const logsEnv = "ROTA_E2E_LOGS"

// logWriter is where node n's output goes: its buffer, and a file when logsEnv is set.
func (c *cluster) logWriter(n *node) io.Writer {
	dir := os.Getenv(logsEnv)
	if dir == "" {
		return n.out
	}
	if n.file == nil {
		name := strings.ReplaceAll(c.t.Name(), "/", "_") + "-" + n.id + ".log"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			c.t.Fatalf("%s: %v", logsEnv, err)
		}
		c.t.Cleanup(func() { f.Close() })
		n.file = f
	}
	return io.MultiWriter(n.out, n.file)
}

// nodeStore is the --store URL of node id: the cluster's, with the node named as the
// application of its connections, so the test can tell them apart in pg_stat_activity (on
// Redis: as the client name, in CLIENT LIST).
func (c *cluster) nodeStore(id string) string {
	c.t.Helper()
	u, err := url.Parse(c.store)
	if err != nil {
		c.t.Fatal(err)
	}
	q := u.Query()
	param := "application_name"
	if c.rdb != nil {
		param = "client_name"
	}
	q.Set(param, c.applicationName(id))
	u.RawQuery = q.Encode()
	return u.String()
}

// applicationName names node id's connections: unique among every test on the server.
func (c *cluster) applicationName(id string) string { return c.schema + "/" + id }

// waitDisconnected polls until the server has ended every session of node id. A SIGKILLed
// node's statements can still be running in the server when the process is gone; once its
// sessions are over, what it committed is all it will ever commit.
func (c *cluster) waitDisconnected(t *testing.T, id string, within time.Duration) {
	t.Helper()
	var n int
	gone := eventually(within, pollEvery, func() bool {
		n = c.sessions(t, id)
		return n == 0
	})
	if !gone {
		t.Fatalf("node %s still has %d sessions in the server %v after it ended", id, n, within)
	}
}

// sessions counts node id's sessions in the server.
func (c *cluster) sessions(t *testing.T, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c.rdb != nil {
		return c.redisSessions(ctx, t, id)
	}
	var n int
	err := c.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", c.applicationName(id)).Scan(&n)
	if err != nil {
		t.Fatalf("count node %s's sessions: %v", id, err)
	}
	return n
}

// node finds a node of the cluster by id.
func (c *cluster) node(id string) *node {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	c.t.Fatalf("no node %q in the cluster", id)
	return nil
}

// dumpLogsOnFailure shows the end of every node's log when the test failed: the only record of
// what the processes did.
func (c *cluster) dumpLogsOnFailure() {
	if !c.t.Failed() {
		return
	}
	for _, n := range c.nodes {
		lines := strings.Split(strings.TrimSpace(n.out.String()), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		c.t.Logf("last lines of node %s's log:\n%s", n.id, strings.Join(lines, "\n"))
	}
}

// jobLogPath is the file the cluster's job scripts append to.
func (c *cluster) jobLogPath() string { return filepath.Join(c.dir, "jobs.log") }
