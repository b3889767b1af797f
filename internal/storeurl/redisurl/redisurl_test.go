package redisurl

import (
	"context"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store"
)

func TestParse(t *testing.T) {
	loc, err := storeurl.Parse("redis://u:secret@127.0.0.1:6379/3?namespace=prod")
	if err != nil {
		t.Fatal(err)
	}
	if loc.Kind != Kind || loc.Schema != "prod" {
		t.Fatalf("Parse = %+v", loc)
	}
	if s := loc.String(); strings.Contains(s, "secret") {
		t.Fatalf("Location.String() shows the password: %s", s)
	}
	if _, err := storeurl.Parse("rediss://127.0.0.1:6379/0"); err != nil {
		t.Fatalf("rediss: %v", err)
	}
	if _, err := storeurl.Parse("redis://127.0.0.1:6379/0?namespace="); err == nil {
		t.Fatal("an empty namespace was accepted")
	}
	if _, err := storeurl.Parse("redis://u:secret@h:1/0?bogus=1"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unknown option: %v", err)
	}
}

// A store opened by URL works on its namespace once migrated.
func TestOpen(t *testing.T) {
	url := redistest.URL(t)
	ns := redistest.Namespace(t, url)
	s, err := storeurl.Open(context.Background(), redistest.StoreURL(t, url, ns))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := s.Insert(t.Context(), []store.InsertParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 1}})
	if err != nil || len(res) != 1 {
		t.Fatalf("Insert = %v, %v", res, err)
	}
}
