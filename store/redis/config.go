package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrEvictionPolicy is wrapped by Open's error for a server whose maxmemory-policy is allkeys-*:
// when memory fills up such a server deletes any key, a job's hash or the index entry that
// finds it, and nothing tells rota. WithAllowEviction (allow_eviction=true) accepts it anyway.
var ErrEvictionPolicy = errors.New("maxmemory-policy evicts any key when memory is full, jobs included")

// The settings checkServer reads, in one CONFIG GET (Redis 7 takes several patterns).
var checkedSettings = []any{"appendonly", "appendfsync", "save", "maxmemory-policy"}

// checkServer reads the server's persistence and eviction settings, best effort: managed
// services often rename or forbid CONFIG, and a store that refused to open there would be
// unusable for reasons that are not its own. It warns about settings that lose acknowledged jobs
// on a restart (see the package documentation's Durability) and refuses an allkeys-* eviction
// policy, which loses them while Redis runs.
func (s *Store) checkServer(ctx context.Context) error {
	log := s.cfg.logger.With("namespace", s.cfg.namespace)
	args := append([]any{"CONFIG", "GET"}, checkedSettings...)
	v, err := s.rdb.Do(ctx, args...).Result()
	if err != nil {
		if ctx.Err() != nil || unavailable(err) {
			return s.fail("open: read the server's configuration", err)
		}
		// Renamed (unknown command), denied by an ACL (NOPERM), or refused by a managed service.
		log.Warn("rota: could not check the Redis server's persistence and eviction settings (CONFIG GET refused); "+
			"make sure it persists (appendonly yes, appendfsync everysec or always) and does not evict (maxmemory-policy noeviction)",
			"error", err)
		return nil
	}
	conf := configMap(v)
	if _, ok := conf["maxmemory-policy"]; !ok {
		// A proxy in front of the server may answer CONFIG GET with nothing.
		log.Warn("rota: could not check the Redis server's persistence and eviction settings (CONFIG GET answered none)")
		return nil
	}
	if policy := conf["maxmemory-policy"]; strings.HasPrefix(policy, "allkeys-") {
		if !s.cfg.allowEviction {
			return fmt.Errorf("redis: open: the server's maxmemory-policy is %s: %w; set it to noeviction (or a volatile-* policy: rota sets no TTLs), "+
				"or accept losing jobs with WithAllowEviction / allow_eviction=true", policy, ErrEvictionPolicy)
		}
		log.Warn("rota: Redis may evict jobs when memory is full (allowed by allow_eviction)", "maxmemory-policy", policy)
	}
	aof := conf["appendonly"] == "yes"
	rdb := strings.TrimSpace(conf["save"]) != ""
	switch {
	case !aof && !rdb:
		log.Warn("rota: Redis persistence is off (appendonly no, no save points): a restart of Redis loses every job")
	case !aof:
		log.Warn("rota: Redis persists only RDB snapshots (appendonly no): a restart loses the jobs written since the last snapshot",
			"save", conf["save"])
	}
	if fsync := conf["appendfsync"]; aof && fsync != "always" && fsync != "everysec" {
		log.Warn("rota: Redis appendfsync is neither always nor everysec: a crash of the machine loses the jobs the kernel had not yet written, "+
			"up to about 30 s of them", "appendfsync", fsync)
	}
	return nil
}

// configMap reads CONFIG GET's reply: a map under RESP3, a flat name, value list under RESP2.
func configMap(v any) map[string]string {
	out := make(map[string]string)
	switch r := v.(type) {
	case map[any]any:
		for k, val := range r {
			out[toStr(k)] = toStr(val)
		}
	case map[string]any:
		for k, val := range r {
			out[k] = toStr(val)
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			out[toStr(r[i])] = toStr(r[i+1])
		}
	}
	return out
}
