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

// ReencryptArgs re-encrypts one mailbox under the account's new key.
type ReencryptArgs struct {
	Account string `json:"account"`
	Mailbox string `json:"mailbox"`
}

func (ReencryptArgs) Kind() string { return "reencrypt-mailbox" }

// NotifyOwnerArgs mails an account's owner that their mail is re-encrypted.
type NotifyOwnerArgs struct {
	Account string `json:"account"`
}

func (NotifyOwnerArgs) Kind() string { return "notify-owner" }

// A workflow: re-encrypt every mailbox of an account in parallel, then mail the owner once all
// of them are done. The mail step reads what each mailbox step reported.
func ExampleWorkflow() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rota-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rota.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[ReencryptArgs](func(ctx context.Context, job *rota.Job[ReencryptArgs]) error {
		// ... read the mailbox, encrypt it under the new key, swap it in ...
		return job.SetResult(map[string]int{"messages": len(job.Args.Mailbox) * 100})
	}), nil)
	rota.AddWorker(workers, rota.WorkFunc[NotifyOwnerArgs](func(ctx context.Context, job *rota.Job[NotifyOwnerArgs]) error {
		deps, err := job.Dependencies(ctx)
		if err != nil {
			return err
		}
		total := 0
		for _, d := range deps {
			var r struct{ Messages int }
			if err := job.StepResult(ctx, d.Step, &r); err != nil {
				return err
			}
			total += r.Messages
		}
		// ... send the mail ...
		return job.SetResult(fmt.Sprintf("%d mailboxes, %d messages re-encrypted", len(deps), total))
	}), nil)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: workers, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if err := node.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer node.Stop(ctx)

	wf := rota.NewWorkflow()
	var boxes []string
	for _, mailbox := range []string{"inbox", "sent", "archive"} {
		step := "reencrypt-" + mailbox
		wf.Add(step, ReencryptArgs{Account: "acct-42", Mailbox: mailbox}, &rota.InsertOpts{MaxAttempts: 5})
		boxes = append(boxes, step)
	}
	wf.Add("notify-owner", NotifyOwnerArgs{Account: "acct-42"}, nil).After(boxes...)

	res, err := node.Client().InsertWorkflow(ctx, wf)
	if err != nil {
		log.Fatal(err)
	}
	done, err := node.Client().Wait(ctx, res.Steps["notify-owner"].ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, string(done.Result))
	info, err := node.Client().Workflow(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rota.WorkflowStatus(info.Counts), len(info.Steps), "steps")
	// Output:
	// completed "3 mailboxes, 1600 messages re-encrypted"
	// completed 4 steps
}
