package main

import (
	"strings"
	"testing"
)

// A PostgreSQL URL may carry its password as a query parameter (pgx and libpq read
// ?password=), not only in the userinfo: storeName, which `rota status`, `rota serve`'s log and
// every "not found in STORE" error print, hides both.
func TestStoreNameHidesQueryPassword(t *testing.T) {
	for _, url := range []string{
		"postgres://rota@db.example:5432/rota?password=s3cretpw",
		"postgresql://rota@db.example/rota?sslmode=require&password=s3cretpw",
		"postgres://rota@db.example/rota?sslpassword=s3cretpw&sslkey=/k.pem",
	} {
		a := &app{storeURL: url}
		if name := a.storeName(); strings.Contains(name, "s3cretpw") {
			t.Errorf("storeName(%q) = %q: the password is shown", url, name)
		}
	}
	// The userinfo form is hidden already: the query form must be too.
	a := &app{storeURL: "postgres://rota:s3cretpw@db.example/rota"}
	if name := a.storeName(); strings.Contains(name, "s3cretpw") {
		t.Fatalf("userinfo password shown: %q", name)
	}
}
