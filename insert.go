package rota

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/internal/jsonenc"
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
	// NameMaxLen bounds kind, queue and schedule names: they end up in URLs, metrics labels
	// and channel names, where a long name is a mistake or an attack, not a need.
	NameMaxLen = 128
	// MaxAttemptsMax bounds InsertOpts.MaxAttempts. Every failed attempt adds its error (and
	// stack) to the job's row, so attempts bound the row's size; and with the default backoff,
	// capped at a day between attempts, a thousand keep a job retrying for close to three years.
	// A job that must never give up needs a person to look at it more than more attempts.
	MaxAttemptsMax = 1000
	// UniqueKeyMaxBytes bounds InsertOpts.UniqueKey. The key is indexed, and PostgreSQL cannot
	// index a text over about 2,700 bytes (a B-tree entry must fit in a third of a page): a
	// longer key would fail in the store instead of here. A kilobyte holds every derived key
	// (under 400 bytes) and any key of a producer's own, such as an idempotency key or a URL.
	UniqueKeyMaxBytes = 1 << 10
	// TagsMax bounds how many tags one job has, and TagMaxBytes each of them: tags are labels
	// for people and filters, read back with every listing of jobs, not a place for data.
	TagsMax, TagMaxBytes = 32, 128
	// MetadataMaxBytes bounds a job's encoded metadata. Metadata describes a job (who asked for
	// it, the trace of the insert) and is read back with every listing of jobs; data the job
	// works on belongs in its args, under their own limit.
	MetadataMaxBytes = 64 << 10
)

// timeMax is the latest RunAt or ExpiresAt an insert takes: the stores keep times as Unix
// microseconds (an int64) or PostgreSQL timestamps, and RFC 3339 has four-digit years.
var timeMax = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

var (
	// ErrInvalid is wrapped by every error about input refused as given: a job that cannot be
	// inserted, a schedule, a list's filters, a node's settings.
	ErrInvalid = errors.New("invalid input")
	// ErrBusy is wrapped by the error of a best-effort insert (DropIfBusy) refused because its
	// queue is busy or a limit it is held to is full.
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
	// RunAt delays the job until then. Zero or a time already past means now; a time past the
	// year 9999 is refused.
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
	// (available), or a fleet-wide limit on the queue or the job's kind lets no job start now (as
	// many running as it allows, or its rate's starts in the window used up), the job is not
	// inserted and Insert returns an error wrapping ErrBusy (a batch or workflow with such a job
	// is not inserted at all). For optional work that is pointless if it cannot start soon. 0
	// turns it off.
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

// validName checks kind and queue names: they end up in URLs, metrics labels and channel names.
func validName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(name) > NameMaxLen {
		return fmt.Errorf("%w: %s %.20q… is %d characters, over the limit of %d", ErrInvalid, what, name, len(name), NameMaxLen)
	}
	if !nameChars(name) {
		return fmt.Errorf("%w: %s %q: use letters, digits and _ . : / - (starting with a letter or digit)", ErrInvalid, what, name)
	}
	return nil
}

// nameChars reports whether name is letters, digits and _ . : / -, starting with a letter or
// digit. A loop rather than a regular expression: every inserted job checks two names, and the
// match cost a tenth of a batch insert's CPU.
func nameChars(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == ':' || c == '/' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// checkText checks a free-form text the store keeps as text: at most limit bytes, and valid
// UTF-8 without NUL, which is all PostgreSQL stores in a text column (SQLite takes anything,
// but a job must be one any store can hold).
func checkText(what, s string, limit int) error {
	if len(s) > limit {
		return fmt.Errorf("%w: %s %.20q… is %d bytes, over the limit of %d bytes", ErrInvalid, what, s, len(s), limit)
	}
	if !store.Storable(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8 text without NUL", ErrInvalid, what, s)
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
	if opts.DropIfBusy < 0 {
		return p, fmt.Errorf("%w: drop if busy %d: want a count of waiting jobs, or 0 for off", ErrInvalid, opts.DropIfBusy)
	}
	if p.MaxAttempts < 1 {
		return p, fmt.Errorf("%w: max attempts %d: must be at least 1", ErrInvalid, p.MaxAttempts)
	}
	if p.MaxAttempts > MaxAttemptsMax {
		return p, fmt.Errorf("%w: max attempts %d: over the limit of %d", ErrInvalid, p.MaxAttempts, MaxAttemptsMax)
	}
	if err := checkText("unique key", p.UniqueKey, UniqueKeyMaxBytes); err != nil {
		return p, err
	}
	if len(p.Tags) > TagsMax {
		return p, fmt.Errorf("%w: %d tags, over the limit of %d", ErrInvalid, len(p.Tags), TagsMax)
	}
	for i, tag := range p.Tags {
		if tag == "" { // no listing could find it: an empty filter lists every job
			return p, fmt.Errorf("%w: tag %d is empty", ErrInvalid, i+1)
		}
		if err := checkText(fmt.Sprintf("tag %d", i+1), tag, TagMaxBytes); err != nil {
			return p, err
		}
	}
	if p.Priority < PriorityMin || p.Priority > PriorityMax {
		return p, fmt.Errorf("%w: priority %d outside [%d, %d]", ErrInvalid, p.Priority, PriorityMin, PriorityMax)
	}
	now := c.clock.Now()
	for _, t := range []struct {
		what string
		at   time.Time
	}{{"run at", opts.RunAt}, {"expires at", opts.ExpiresAt}} {
		if t.at.After(timeMax) {
			return p, fmt.Errorf("%w: %s %s is past %s, the latest time every store keeps", ErrInvalid, t.what, t.at, timeMax.Format(time.RFC3339))
		}
	}
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
	raw, err := jsonenc.Marshal(args) // stored as written: no \u003e for >
	if err != nil {
		return p, fmt.Errorf("%w: encode args of kind %q: %v", ErrInvalid, p.Kind, err)
	}
	if len(raw) > c.maxArgsBytes {
		return p, fmt.Errorf("%w: args of kind %q are %d bytes, over the limit of %d bytes", ErrInvalid, p.Kind, len(raw), c.maxArgsBytes)
	}
	if esc, bad := badEscape(raw); bad {
		return p, fmt.Errorf("%w: args of kind %q hold %s, which no store keeps as text (a NUL, or half a surrogate pair)", ErrInvalid, p.Kind, esc)
	}
	p.Args = raw
	if opts.Unique.enabled() && p.UniqueKey == "" {
		if p.UniqueKey, err = opts.Unique.key(&p, now); err != nil {
			return p, err
		}
	}
	if opts.Unique != nil {
		for _, st := range opts.Unique.ByState {
			if !st.Valid() {
				return p, fmt.Errorf("%w: unique by state: unknown state %q", ErrInvalid, st)
			}
		}
		p.UniqueStates = opts.Unique.ByState
	}
	if p.Supersede && p.UniqueKey == "" {
		return p, fmt.Errorf("%w: supersede needs a unique key (Unique or UniqueKey)", ErrInvalid)
	}
	if opts.Metadata != nil {
		if p.Metadata, err = json.Marshal(opts.Metadata); err != nil {
			return p, fmt.Errorf("%w: encode metadata: %v", ErrInvalid, err)
		}
		if len(p.Metadata) > MetadataMaxBytes {
			return p, fmt.Errorf("%w: metadata is %d bytes, over the limit of %d bytes", ErrInvalid, len(p.Metadata), MetadataMaxBytes)
		}
		if esc, bad := badEscape(p.Metadata); bad {
			return p, fmt.Errorf("%w: metadata holds %s, which no store keeps as text (a NUL, or half a surrogate pair)", ErrInvalid, esc)
		}
	}
	return p, nil
}
