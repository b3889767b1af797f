package rota

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/rotahq/rota/store"
)

// Defaults and limits for inserts.
const (
	// QueueDefault is the queue of jobs inserted without one.
	QueueDefault = "default"
	// MaxArgsBytesDefault caps the encoded args of one job. Args should name the data a job works
	// on, not carry it: a large payload slows every claim that reads it.
	MaxArgsBytesDefault = 1 << 20
	// PriorityMin and PriorityMax bound InsertOpts.Priority.
	PriorityMin, PriorityMax = -1000, 1000
)

var (
	// ErrInvalid is wrapped by every error about a job that cannot be inserted as given.
	ErrInvalid = errors.New("invalid job")
	// ErrBusy is wrapped by the error of a best-effort insert (DropIfBusy) refused because its
	// queue is busy.
	ErrBusy = errors.New("queue is busy")
)

// InsertOpts are the optional settings of one insert. The zero value runs the job now on the
// default queue with the default priority and attempts.
type InsertOpts struct {
	// Queue defaults to QueueDefault.
	Queue string
	// Priority orders due jobs within a queue: higher runs first. Defaults to 0.
	Priority int
	// MaxAttempts is how many times the job may run before it is discarded. Defaults to
	// MaxAttemptsDefault.
	MaxAttempts int
	// RunAt delays the job until then. Zero or a time already past means now.
	RunAt time.Time
	// ExpiresAt drops the job, as expired, if it has not started by then.
	ExpiresAt time.Time
	// Unique makes a second insert of an equal job return the existing one (InsertResult.Duplicate)
	// instead of adding another.
	Unique *UniqueOpts
	// UniqueKey sets the unique key directly, for producers that name their own; it wins over
	// Unique's derived key, and Unique.ByState still applies.
	UniqueKey string
	// Supersede replaces a not-yet-running equal job (unique by Unique or UniqueKey) instead of
	// returning it: the old one ends cancelled, because the newer request makes it pointless. If
	// the old one is already running, it is left to finish and the new one is inserted; the new
	// one may start while the old one still runs. Where two must never overlap, put them on a
	// queue or kind with a fleet-wide limit of one (SetLimit).
	Supersede bool
	Tags      []string
	// DropIfBusy makes the insert best-effort: when the queue already has this many jobs waiting
	// (available), the job is not inserted and Insert returns an error wrapping ErrBusy. For
	// optional work that is pointless if it cannot start soon. 0 turns it off.
	DropIfBusy int
	// Metadata is free-form data kept with the job, encoded as JSON.
	Metadata any
}

// InsertResult is the job an insert produced, or the existing one its unique key matched.
type InsertResult = store.InsertResult

// InsertManyParams is one job of an InsertMany call.
type InsertManyParams struct {
	Args Args
	Opts *InsertOpts
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`)

// validName checks kind and queue names: they end up in URLs, metrics labels and channel names.
func validName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(name) > 128 {
		return fmt.Errorf("%w: %s %.20q… is %d characters, over the limit of 128", ErrInvalid, what, name, len(name))
	}
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: %s %q: use letters, digits and _ . : / - (starting with a letter or digit)", ErrInvalid, what, name)
	}
	return nil
}

// params validates one job and turns it into what a store inserts.
func (c *Client) params(args Args, opts *InsertOpts) (store.InsertParams, error) {
	if args == nil {
		return store.InsertParams{}, fmt.Errorf("%w: args are nil", ErrInvalid)
	}
	if opts == nil {
		opts = &InsertOpts{}
	}
	p := store.InsertParams{
		Kind:        args.Kind(),
		Queue:       opts.Queue,
		Priority:    opts.Priority,
		MaxAttempts: opts.MaxAttempts,
		ExpiresAt:   opts.ExpiresAt,
		UniqueKey:   opts.UniqueKey,
		Supersede:   opts.Supersede,
		Tags:        opts.Tags,
	}
	if p.Queue == "" {
		p.Queue = QueueDefault
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = MaxAttemptsDefault
	}
	if err := validName("kind", p.Kind); err != nil {
		return p, err
	}
	if err := validName("queue", p.Queue); err != nil {
		return p, err
	}
	if p.MaxAttempts < 1 {
		return p, fmt.Errorf("%w: max attempts %d: must be at least 1", ErrInvalid, p.MaxAttempts)
	}
	if p.Priority < PriorityMin || p.Priority > PriorityMax {
		return p, fmt.Errorf("%w: priority %d outside [%d, %d]", ErrInvalid, p.Priority, PriorityMin, PriorityMax)
	}
	now := c.clock.Now()
	if opts.RunAt.After(now) {
		p.RunAt = opts.RunAt
	}
	if !p.ExpiresAt.IsZero() && !p.ExpiresAt.After(now) {
		return p, fmt.Errorf("%w: expires at %s, which has already passed", ErrInvalid, p.ExpiresAt.Format(time.RFC3339))
	}
	if !p.ExpiresAt.IsZero() && !p.RunAt.IsZero() && !p.ExpiresAt.After(p.RunAt) {
		return p, fmt.Errorf("%w: expires at %s, before it may run at %s", ErrInvalid,
			p.ExpiresAt.Format(time.RFC3339), p.RunAt.Format(time.RFC3339))
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return p, fmt.Errorf("%w: encode args of kind %q: %v", ErrInvalid, p.Kind, err)
	}
	if len(raw) > c.maxArgsBytes {
		return p, fmt.Errorf("%w: args of kind %q are %d bytes, over the limit of %d bytes", ErrInvalid, p.Kind, len(raw), c.maxArgsBytes)
	}
	p.Args = raw
	if opts.Unique.enabled() && p.UniqueKey == "" {
		if p.UniqueKey, err = opts.Unique.key(&p, now); err != nil {
			return p, err
		}
	}
	if opts.Unique != nil {
		p.UniqueStates = opts.Unique.ByState
	}
	if p.Supersede && p.UniqueKey == "" {
		return p, fmt.Errorf("%w: supersede needs a unique key (Unique or UniqueKey)", ErrInvalid)
	}
	if opts.Metadata != nil {
		if p.Metadata, err = json.Marshal(opts.Metadata); err != nil {
			return p, fmt.Errorf("%w: encode metadata: %v", ErrInvalid, err)
		}
	}
	return p, nil
}
