package redis

import "testing"

// ParseURL gives the pool PoolSizeDefault connections unless the URL sets the parameter
// pool_size: a namespace (or any value) that merely contains "pool_size" leaves the default.
func TestPoolSizeDefaultWithNamespaceNamedPoolSize(t *testing.T) {
	for _, url := range []string{
		"redis://127.0.0.1:6379/0?namespace=pool_size_jobs",
		"redis://127.0.0.1:6379/0?client_name=my_pool_size_app",
	} {
		uo, _, err := ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		if uo.PoolSize != PoolSizeDefault {
			t.Errorf("ParseURL(%q).PoolSize = %d, want %d (no pool_size parameter)", url, uo.PoolSize, PoolSizeDefault)
		}
	}
}
