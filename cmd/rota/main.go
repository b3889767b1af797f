// Command rota runs and manages durable background jobs: `rota serve` runs a node with the
// built-in job kinds, `rota enqueue` adds jobs, `rota jobs` inspects and steers them, and
// `rota migrate` prepares a store. Every command takes the store with --store or ROTA_STORE.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
