package redis

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"

	"github.com/rotahq/rota/internal/rediskeys"

	"github.com/rotahq/rota/internal/syncbuf"
)

// logsTo is a logger writing to b, for tests of what Open warns about.
func logsTo(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// openLogged opens a store on url's namespace ns and returns what it logged while opening.
func openLogged(t *testing.T, url, ns string, opts ...Option) (*Store, string, error) {
	t.Helper()
	var logs syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url, append([]Option{WithNamespace(ns), WithAutoMigrate(), WithLogger(logsTo(&logs))}, opts...)...)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, logs.String(), err
}

// Open reads the server's persistence and eviction settings: it warns about settings that lose
// jobs on a restart and refuses an eviction policy that loses them at any time.
func TestServerConfigCheck(t *testing.T) {
	url, _ := redistest.Server(t)
	c := redistest.Client(t, url)
	const (
		lossAll   = "a restart of Redis loses every job"
		lossRDB   = "only RDB snapshots"
		lossFsync = "appendfsync is neither always nor everysec"
	)
	for _, tc := range []struct {
		name     string
		settings []string // CONFIG SET name value …
		want     []string // in the log
		wantNot  []string
	}{
		{"no persistence", []string{"appendonly", "no", "save", "", "maxmemory-policy", "noeviction"},
			[]string{lossAll}, []string{lossFsync, lossRDB}},
		{"rdb only", []string{"appendonly", "no", "save", "3600 1", "maxmemory-policy", "noeviction"},
			[]string{lossRDB}, []string{lossAll, lossFsync}},
		{"aof fsync no", []string{"appendonly", "yes", "appendfsync", "no", "save", ""},
			[]string{lossFsync}, []string{lossAll, lossRDB}},
		{"aof everysec", []string{"appendonly", "yes", "appendfsync", "everysec", "save", ""},
			nil, []string{lossAll, lossRDB, lossFsync, "level=WARN"}},
		{"aof always, volatile-lru", []string{"appendonly", "yes", "appendfsync", "always", "maxmemory-policy", "volatile-lru"},
			nil, []string{"level=WARN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < len(tc.settings); i += 2 {
				if err := c.ConfigSet(t.Context(), tc.settings[i], tc.settings[i+1]).Err(); err != nil {
					t.Fatalf("CONFIG SET %s %q: %v", tc.settings[i], tc.settings[i+1], err)
				}
			}
			_, logs, err := openLogged(t, url, redistest.Namespace(t, url))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(logs, w) {
					t.Errorf("log lacks %q:\n%s", w, logs)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(logs, w) {
					t.Errorf("log has %q:\n%s", w, logs)
				}
			}
		})
	}

	t.Run("allkeys eviction", func(t *testing.T) {
		if err := c.ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatal(err)
		}
		ns := redistest.Namespace(t, url)
		_, _, err := openLogged(t, url, ns)
		if !errors.Is(err, ErrEvictionPolicy) || !strings.Contains(err.Error(), "allkeys-lru") || !strings.Contains(err.Error(), "allow_eviction") {
			t.Fatalf("Open on allkeys-lru = %v, want ErrEvictionPolicy naming the policy and the way out", err)
		}
		if n := c.Exists(t.Context(), rediskeys.Prefix(ns)+"meta").Val(); n != 0 {
			t.Fatal("the refused Open migrated the namespace")
		}
		for name, open := range map[string]func() (*Store, string, error){
			"WithAllowEviction": func() (*Store, string, error) { return openLogged(t, url, ns, WithAllowEviction()) },
			"allow_eviction=true": func() (*Store, string, error) {
				return openLogged(t, redistest.StoreURL(t, url, ns)+"&allow_eviction=true", ns)
			},
		} {
			s, logs, err := open()
			if err != nil {
				t.Fatalf("Open %s: %v", name, err)
			}
			if !strings.Contains(logs, "may evict jobs") {
				t.Errorf("Open %s does not warn about eviction:\n%s", name, logs)
			}
			if _, err := s.Insert(t.Context(), []store.InsertParams{job("k")}); err != nil {
				t.Fatalf("Insert after Open %s: %v", name, err)
			}
		}
	})
}

// A server whose CONFIG is renamed away (as managed services do) opens, with a line saying the
// settings could not be checked.
func TestServerConfigHidden(t *testing.T) {
	url, _ := redistest.Server(t, "--rename-command", "CONFIG", "")
	s, logs, err := openLogged(t, url, redistest.Namespace(t, url))
	if err != nil {
		t.Fatalf("Open without CONFIG: %v", err)
	}
	if !strings.Contains(logs, "could not check") || strings.Contains(logs, "loses every job") {
		t.Errorf("log without CONFIG:\n%s", logs)
	}
	if _, err := s.Insert(t.Context(), []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
}

func TestParseURLStoreOptions(t *testing.T) {
	for raw, want := range map[string]config{
		"redis://h:1/0?allow_eviction=true":                         {allowEviction: true},
		"redis://h:1/0?allow_eviction=false":                        {},
		"redis://h:1/0?wait_replicas=2":                             {waitReplicas: 2, waitTimeout: WaitTimeoutDefault},
		"redis://h:1/0?wait_replicas=1&wait_timeout=250ms":          {waitReplicas: 1, waitTimeout: 250 * time.Millisecond},
		"redis://h:1/0?namespace=x&wait_timeout=40&wait_replicas=1": {waitReplicas: 1, waitTimeout: 40 * time.Millisecond},
	} {
		_, _, opts, err := parseURL(raw)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		var got config
		for _, o := range opts {
			o(&got)
		}
		if got != want {
			t.Errorf("%s: %+v, want %+v", raw, got, want)
		}
	}
	for _, raw := range []string{
		"redis://h:1/0?allow_eviction=maybe", "redis://h:1/0?wait_replicas=-1", "redis://h:1/0?wait_replicas=x",
		"redis://h:1/0?wait_replicas=1&wait_timeout=0", "redis://h:1/0?wait_replicas=1&wait_timeout=soon",
		"redis://h:1/0?wait_timeout=1s",
	} {
		if _, _, err := ParseURL(raw); err == nil {
			t.Errorf("%s was accepted", raw)
		}
	}
}
