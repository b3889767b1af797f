package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/store/storetest"
)

// Two handles on one file (two processes' stores) end a dependent's last dependencies at once,
// and insert a dependent while its dependency completes.
func TestDepRacesTwoStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	a, b := open(t, path), open(t, path)
	t.Run("LastDepsRace", func(t *testing.T) { storetest.LastDepsRace(t, a, b) })
	t.Run("InsertDepRace", func(t *testing.T) { storetest.InsertDepRace(t, a, b) })
}
