package redisurl

import (
	"slices"
	"testing"

	"github.com/rotahq/rota/store/redis"
)

// The URL a node opens (--store) goes through parse, which takes the namespace out and leaves the
// rest of the query as written: the store reads addr= and master_name= without decoding them, so
// a Cluster's seed addr=host:port must not arrive as "host%3Aport".
func TestParseKeepsAddrAndMasterName(t *testing.T) {
	loc, err := parse("redis://10.0.0.1:6379/0?namespace=jobs&addr=10.0.0.2:6379&addr=10.0.0.3:6379")
	if err != nil {
		t.Fatal(err)
	}
	uo, _, err := redis.ParseURL(loc.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}
	if !slices.Equal(uo.Addrs, want) {
		t.Errorf("seed addresses after parse (URL %q) = %q, want %q", loc.URL, uo.Addrs, want)
	}
}
