package storeurl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rotahq/rota/store"
)

// Backend is a kind of store as URLs name it. A store's registering package fills one in and
// calls Register from its init function, once per scheme it answers to.
type Backend struct {
	// Kind is the scheme the backend registers as canonical: its Locations carry it, and Open
	// looks the backend up by it. It must be registered too.
	Kind string
	// Usage is how an error message tells a person to write a URL of the backend, such as
	// "sqlite:PATH".
	Usage string
	// Parse reads raw, a URL of one of the backend's schemes (scheme included), into a Location
	// of Kind. Its errors are shown to the person who typed the URL: they must not repeat a
	// password.
	Parse func(raw string) (Location, error)
	// Open opens the store at loc, a Location Parse returned. Open wraps its errors with the
	// location.
	Open func(ctx context.Context, loc Location, o Options) (store.Store, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Backend{} // by scheme, lower case
)

// Register makes URLs of scheme (case-insensitive) parse and open with b. Registering a scheme
// twice, or a Backend without Kind, Parse or Open, is a programming error: it panics, as
// database/sql.Register does.
func Register(scheme string, b Backend) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || b.Kind == "" || b.Parse == nil || b.Open == nil {
		panic(fmt.Sprintf("storeurl: Register(%q): incomplete Backend", scheme))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic(fmt.Sprintf("storeurl: Register(%q) called twice", scheme))
	}
	registry[scheme] = b
}

func lookup(scheme string) (Backend, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	b, ok := registry[strings.ToLower(scheme)]
	return b, ok
}

// usage tells a person which URLs this program opens, such as "sqlite:PATH or postgres://…".
func usage() string {
	registryMu.RLock()
	var forms []string
	for _, b := range registry {
		if b.Usage != "" && !slices.Contains(forms, b.Usage) {
			forms = append(forms, b.Usage)
		}
	}
	registryMu.RUnlock()
	slices.Sort(forms)
	if len(forms) == 0 {
		return "a store this program registers (it registers none)"
	}
	return strings.Join(forms, " or ")
}
