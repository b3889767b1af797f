package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota/internal/storeurl"
)

// startHintDefault is how long `enqueue --wait` watches a due job sit unclaimed before it
// suggests that no node serves the store: long enough for a node's poll to pick it up.
const startHintDefault = 3 * time.Second

// app is one run of the command: its output streams and global flags. Tests build one per run, so
// nothing here is global.
type app struct {
	// stdin is where --args - reads from.
	stdin          io.Reader
	stdout, stderr io.Writer
	storeURL       string
	output         string
	// startHint is how long --wait waits for a due job to start before it prints a hint.
	startHint time.Duration
}

// errSilent is returned by commands that have already explained their failure on stderr: the
// exit code is all that is left to give.
var errSilent = errors.New("failed")

// run executes the command line args and returns the process's exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return newApp(stdout, stderr).run(ctx, args)
}

func newApp(stdout, stderr io.Writer) *app {
	return &app{stdin: os.Stdin, stdout: stdout, stderr: stderr, startHint: startHintDefault}
}

func (a *app) run(ctx context.Context, args []string) int {
	stdout, stderr := a.stdout, a.stderr
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		if !errors.Is(err, errSilent) {
			// Errors from the library already start with "rota: ".
			msg := err.Error()
			if !strings.HasPrefix(msg, "rota: ") {
				msg = "rota: " + msg
			}
			fmt.Fprintln(stderr, msg)
		}
		return 1
	}
	return 0
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rota",
		Short: "Durable background jobs: run them now, later, or again until they succeed",
		Long: `rota runs durable background jobs from a store: an embedded SQLite file by default, or
a PostgreSQL database or a Redis shared by many nodes.

Start a node that runs the built-in job kinds (exec, http), then add jobs from anywhere:

  rota serve
  rota enqueue exec --wait -- echo hello`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != "table" && a.output != "json" {
				return fmt.Errorf("--output %q: use table or json", a.output)
			}
			return nil
		},
	}
	storeDefault := storeurl.Default
	if env := os.Getenv("ROTA_STORE"); env != "" {
		storeDefault = env
	}
	root.PersistentFlags().StringVar(&a.storeURL, "store", storeDefault,
		"the store: sqlite:PATH (or a path), postgres://… or redis://… (env ROTA_STORE)")
	if storeDefault != storeurl.Default {
		// Help pages print a flag's default: not the password ROTA_STORE may hold.
		shown := "$ROTA_STORE"
		if loc, err := storeurl.Parse(storeDefault); err == nil {
			shown = loc.String()
		}
		root.PersistentFlags().Lookup("store").DefValue = shown
	}
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	root.AddCommand(a.serveCmd(), a.enqueueCmd(), a.jobsCmd(), a.workflowsCmd(), a.queuesCmd(), a.cronCmd(),
		a.statusCmd(), a.migrateCmd(), a.benchCmd(), a.versionCmd())
	return root
}

// group makes cmd a command of subcommands only. Alone it prints its help; followed by a word
// that names none of its subcommands (rota jobs lst) it fails with the nearest names, where
// cobra would print the help page and exit 0, as if the mistyped command had run.
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		cmd.SuggestionsMinimumDistance = 2
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", strings.Join(s, `" or "`))
		} else {
			msg += fmt.Sprintf("; see %s --help", cmd.CommandPath())
		}
		return errors.New(msg)
	}
	return cmd
}
