package migration

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rotahq/rota/store"
)

func files(names ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, n := range names {
		fsys["m/"+n] = &fstest.MapFile{Data: []byte("-- " + n)}
	}
	return fsys
}

func TestLoad(t *testing.T) {
	set, err := Load(files("0002_b.sql", "0001_a.sql", "README"), "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 2 || set[0].Name != "0001_a" || set[1].Version != 2 || set[1].SQL != "-- 0002_b.sql" {
		t.Fatalf("Load = %+v", set)
	}
	for _, c := range []struct {
		fsys fstest.MapFS
		want string
	}{
		{files("001_a.sql", "003_c.sql"), "want version 2"}, // a gap
		{files("001_a.sql", "01_b.sql"), "want version 2"},  // one version twice
		{files("a.sql"), "no version number"},
		{files("README"), "no m/*.sql files"},
	} {
		if _, err := Load(c.fsys, "m"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%v) = %v, want %q", c.fsys, err, c.want)
		}
	}
}

func TestAfter(t *testing.T) {
	set := MustLoad(files("1_a.sql", "2_b.sql", "3_c.sql"), "m")
	for version, want := range map[int]int{0: 3, 1: 2, 3: 0} {
		got, err := set.After(version)
		if err != nil || len(got) != want || (want > 0 && got[0].Version != version+1) {
			t.Errorf("After(%d) = %+v, %v; want %d from version %d", version, got, err, want, version+1)
		}
	}
	if _, err := set.After(4); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("After(4) = %v, want ErrSchemaTooNew", err)
	}
}
