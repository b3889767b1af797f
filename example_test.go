package rota_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store/sqlite"
)

// GreetArgs are the args of a "greet" job. Kind ties them to their worker.
type GreetArgs struct {
	Name string `json:"name"`
}

func (GreetArgs) Kind() string { return "greet" }

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rota-example")
	defer os.RemoveAll(dir)

	st, err := sqlite.Open(ctx, filepath.Join(dir, "rota.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[GreetArgs](func(ctx context.Context, job *rota.Job[GreetArgs]) error {
		return job.SetResult("hello, " + job.Args.Name)
	}), nil)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: workers, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if err := node.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer node.Stop(ctx)

	res, err := node.Client().Insert(ctx, GreetArgs{Name: "world"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	job, err := node.Client().Wait(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, string(job.Result))
	// Output: completed "hello, world"
}
