package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
	"github.com/rotahq/rota/internal/jsonenc"
)

type enqueueOptions struct {
	args        string
	queue       string
	priority    int
	in          typedDuration
	at          string
	maxAttempts int
	expiresIn   time.Duration
	wait        bool
	timeout     time.Duration
}

func (a *app) enqueueCmd() *cobra.Command {
	var o enqueueOptions
	cmd := &cobra.Command{
		Use:   "enqueue KIND [flags] [-- PROGRAM ARGS...]",
		Short: "Add a job; with --wait, wait for it and print its result",
		Long: `Add a job of kind KIND with JSON args. For the built-in kind exec, everything after --
is the program and its arguments, run without a shell.

With --wait the command waits for the job to end: for exec it prints the program's stdout (and
its stderr to stderr), for other kinds the result as JSON. A job that ends without completing
prints its error and exits non-zero.`,
		Example: `  rota enqueue exec --wait -- echo hello
  rota enqueue exec --in 10m -- ./backup.sh /srv/data
  rota enqueue http --args '{"url":"https://example.com/hook","method":"POST","body":"{}"}'
  rota enqueue report --args '{"month":"2025-01"}' --queue reports --priority 10`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("enqueue needs the job's kind: rota enqueue KIND, such as exec or http (see rota enqueue --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.enqueue(cmd, args, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.args, "args", "", "the job's args as a JSON object, or @FILE, or - for the standard input")
	f.StringVar(&o.queue, "queue", rota.QueueDefault, "the queue to add the job to")
	f.IntVar(&o.priority, "priority", 0, fmt.Sprintf("higher runs first, from %d to %d", rota.PriorityMin, rota.PriorityMax))
	f.Var(&o.in, "in", "run after this delay, such as 30s or 2h")
	f.StringVar(&o.at, "at", "", "run at this time (RFC 3339, such as 2025-06-01T09:00:00+02:00)")
	f.IntVar(&o.maxAttempts, "max-attempts", 0, fmt.Sprintf("attempts before the job is discarded (default %d)", rota.MaxAttemptsDefault))
	f.DurationVar(&o.expiresIn, "expires-in", 0, "drop the job, as expired, if it has not started within this time")
	f.BoolVar(&o.wait, "wait", false, "wait for the job to end and print its result")
	f.DurationVar(&o.timeout, "timeout", 0, "with --wait, give up waiting after this long (the job stays queued); 0 waits for ever")
	return cmd
}

func (a *app) enqueue(cmd *cobra.Command, args []string, o enqueueOptions) error {
	kind, program, err := kindAndProgram(cmd, args)
	if err != nil {
		return err
	}
	opts, err := o.insertOpts(cmd)
	if err != nil {
		return err
	}
	raw, err := a.jobArgs(kind, o.args, program)
	if err != nil {
		return err
	}
	if !builtin.IsKind(kind) {
		fmt.Fprintf(a.stderr, "rota: warning: %q is not a built-in kind (%s): the job waits until a node that registers %q runs it\n",
			kind, strings.Join(builtin.Kinds(), ", "), kind)
	}
	ctx := cmd.Context()
	client, closeStore, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	res, err := client.Insert(ctx, rota.RawArgs{KindName: kind, JSON: raw}, opts)
	if err != nil {
		return err
	}
	job := res.Job
	if !o.wait {
		if a.jsonOutput() {
			return a.printJSON(job)
		}
		when := ""
		if job.State == rota.StateScheduled {
			when = " until " + fmtTime(job.RunAt)
		}
		fmt.Fprintf(a.stdout, "job %d enqueued: %s on queue %s, %s%s\n", job.ID, job.Kind, job.Queue, job.State, when)
		return nil
	}
	return a.waitAndPrint(ctx, client, job, o.timeout)
}

// kindAndProgram splits the arguments into the kind and, after --, an exec job's program.
func kindAndProgram(cmd *cobra.Command, args []string) (kind string, program []string, err error) {
	dash := cmd.ArgsLenAtDash()
	switch {
	case dash == 0:
		return "", nil, errors.New("name the kind before --, as in: rota enqueue exec -- PROGRAM ARGS")
	case dash > 1 || (dash < 0 && len(args) > 1):
		extra := args[1:]
		if dash > 1 {
			extra = args[1:dash]
		}
		return "", nil, fmt.Errorf("unexpected arguments %q after the kind; an exec job's program goes after --, as in: rota enqueue exec -- PROGRAM ARGS", extra)
	case dash == 1:
		program = args[1:]
		if len(program) == 0 {
			return "", nil, errors.New("no program after --")
		}
	}
	return args[0], program, nil
}

// argsMaxBytes bounds what --args @FILE, --args - and `workflows insert --file` read: far more
// than a store takes (the insert says so in its own words), and no more than a mistaken file or
// pipe can cost.
const argsMaxBytes = 64 << 20

// readArgsFlag is the text of --args: as given, or read from FILE for @FILE, or from the
// standard input for -, for args larger than a command line may be.
func (a *app) readArgsFlag(v string) (string, error) {
	path := v
	switch {
	case v == "-":
	case strings.HasPrefix(v, "@"):
		path = v[1:]
	default:
		return v, nil
	}
	b, err := a.readInput("--args", v, path)
	return string(b), err
}

// readInput reads the file at path, or the standard input for -, that flag (given as value)
// names: at most argsMaxBytes, and not empty.
func (a *app) readInput(flag, value, path string) ([]byte, error) {
	var (
		r    io.Reader
		name string
	)
	if path == "-" {
		r, name = a.stdin, "the standard input"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, value, err)
		}
		defer f.Close()
		r, name = f, path
	}
	b, err := io.ReadAll(io.LimitReader(r, argsMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", flag, name, err)
	}
	if len(b) > argsMaxBytes {
		return nil, fmt.Errorf("%s: %s holds more than %d MiB", flag, name, argsMaxBytes>>20)
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, fmt.Errorf("%s: %s is empty", flag, name)
	}
	return b, nil
}

// jobArgs builds the job's JSON args from --args (see readArgsFlag) and, for exec, the program
// after --.
func (a *app) jobArgs(kind, argsFlag string, program []string) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	argsFlag, err := a.readArgsFlag(argsFlag)
	if err != nil {
		return nil, err
	}
	if argsFlag != "" {
		if err := parseArgsObject(argsFlag, &fields); err != nil {
			return nil, err
		}
	}
	if program != nil {
		if kind != builtin.KindExec {
			return nil, fmt.Errorf("only exec jobs take a program after --; give a %s job its args with --args", kind)
		}
		if _, ok := fields["program"]; ok {
			return nil, errors.New("the program is given twice: in --args and after --")
		}
		fields["program"], _ = jsonenc.Marshal(program[0])
		if len(program) > 1 {
			if _, ok := fields["args"]; ok {
				return nil, errors.New("the program's arguments are given twice: in --args and after --")
			}
			fields["args"], _ = jsonenc.Marshal(program[1:])
		}
	}
	raw, err := jsonenc.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode args: %w", err)
	}
	if err := builtin.Validate(kind, raw); err != nil {
		return nil, fmt.Errorf("invalid args for %s: %w", kind, err)
	}
	return raw, nil
}

// parseArgsObject decodes --args into fields, pointing at the place of a syntax error.
func parseArgsObject(s string, fields *map[string]json.RawMessage) error {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(s, syn.Offset)
			return fmt.Errorf("--args is not valid JSON: %v at line %d, column %d (byte %d)", err, line, col, syn.Offset)
		}
		return fmt.Errorf("--args is not valid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("--args must be a JSON object such as {\"key\": \"value\"}, not %s", jsonType(v))
	}
	return json.Unmarshal([]byte(s), fields)
}

// position turns a byte offset into a 1-based line and column.
func position(s string, offset int64) (line, col int) {
	offset = min(offset, int64(len(s)))
	before := s[:offset]
	line = strings.Count(before, "\n") + 1
	col = int(offset) - (strings.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1 // the error is at the first byte of a line, or of an empty input
	}
	return line, col
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// insertOpts checks the scheduling flags and turns them into insert options.
func (o *enqueueOptions) insertOpts(cmd *cobra.Command) (*rota.InsertOpts, error) {
	opts := &rota.InsertOpts{Queue: o.queue, Priority: o.priority, MaxAttempts: o.maxAttempts}
	flags := cmd.Flags()
	if flags.Changed("in") && flags.Changed("at") {
		return nil, errors.New("--in and --at both say when to run; give one")
	}
	now := time.Now()
	if o.in.d < 0 {
		return nil, fmt.Errorf("--in %s is negative: a job cannot run in the past (leave --in out to run it now)", o.in.raw)
	}
	if o.in.d > 0 {
		opts.RunAt = now.Add(o.in.d)
	}
	if o.at != "" {
		t, err := time.Parse(time.RFC3339, o.at)
		if err != nil {
			return nil, fmt.Errorf("--at %q: want an RFC 3339 time such as 2025-06-01T09:00:00Z: %w", o.at, err)
		}
		// As --in with a negative delay: a time that has passed is most likely a mistake (a
		// wrong date, a zone left out), not a wish to run now.
		if !t.After(now) {
			return nil, fmt.Errorf("--at %s is %s in the past: a job cannot run in the past (leave --at out to run it now)",
				o.at, roughly(now.Sub(t)))
		}
		opts.RunAt = t
	}
	if flags.Changed("max-attempts") && o.maxAttempts < 1 {
		return nil, fmt.Errorf("--max-attempts %d: must be at least 1", o.maxAttempts)
	}
	if flags.Changed("expires-in") {
		if o.expiresIn <= 0 {
			return nil, fmt.Errorf("--expires-in %v: must be positive", o.expiresIn)
		}
		opts.ExpiresAt = now.Add(o.expiresIn)
	}
	if o.timeout < 0 {
		return nil, fmt.Errorf("--timeout %v is negative", o.timeout)
	}
	if flags.Changed("timeout") && !o.wait {
		return nil, errors.New("--timeout bounds --wait; add --wait")
	}
	return opts, nil
}

// typedDuration is a duration flag that remembers how it was typed, so that messages quote the
// user (--in -5m) rather than Go's form of the value (-5m0s).
type typedDuration struct {
	d   time.Duration
	raw string
}

func (v *typedDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 30s, 10m or 2h")
	}
	v.d, v.raw = d, s
	return nil
}

func (v *typedDuration) String() string {
	if v.raw == "" {
		return "0s"
	}
	return v.raw
}

func (v *typedDuration) Type() string { return "duration" }

// roughly is d as a person would say it: to the second within two days, in days beyond.
func roughly(d time.Duration) string {
	if d < 48*time.Hour {
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%d days", d/(24*time.Hour))
}
