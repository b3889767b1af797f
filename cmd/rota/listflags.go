package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rotahq/rota"
)

// listFlags are the `jobs list` filters that need parsing before they become ListParams.
type listFlags struct {
	argsPath      string
	createdAfter  string
	createdBefore string
}

func (f *listFlags) register(fs *pflag.FlagSet, p *rota.ListParams) {
	fs.StringVar(&p.Tag, "tag", "", "only jobs carrying this tag")
	fs.StringVar(&p.Schedule, "schedule", "", "only jobs this cron schedule planned")
	fs.StringVar(&p.Owner, "owner", "", "only jobs running on this node (its id, as rota status lists it)")
	fs.StringVar(&p.ArgsContains, "args-contains", "", "only jobs whose args' JSON text contains this (case-sensitive)")
	fs.StringVar(&f.argsPath, "args-path", "", `only jobs whose args hold VALUE (JSON: 42, '"acme"', true) at PATH (keys separated by dots), as PATH=VALUE`)
	fs.StringVar(&f.createdAfter, "created-after", "", "only jobs created at or after this time (RFC 3339, or a duration ago such as 2h)")
	fs.StringVar(&f.createdBefore, "created-before", "", "only jobs created before this time (RFC 3339, or a duration ago such as 2h)")
}

// apply parses the flags into p and checks the whole filter, so that a bad one is named by its
// flag before any store is opened.
func (f *listFlags) apply(p *rota.ListParams, now time.Time) error {
	if f.argsPath != "" {
		path, value, ok := strings.Cut(f.argsPath, "=")
		if !ok {
			return fmt.Errorf("--args-path %q: use PATH=VALUE, such as account.id=42", f.argsPath)
		}
		p.ArgsPath, p.ArgsValue = path, value
		if err := (rota.ListParams{ArgsPath: path, ArgsValue: value}).Check(); err != nil {
			return fmt.Errorf("--args-path %q: %w", f.argsPath, err)
		}
	}
	var err error
	if p.CreatedAfter, err = pointInTime(f.createdAfter, now); err != nil {
		return fmt.Errorf("--created-after %w", err)
	}
	if p.CreatedBefore, err = pointInTime(f.createdBefore, now); err != nil {
		return fmt.Errorf("--created-before %w", err)
	}
	return p.Check()
}

// pointInTime reads an RFC 3339 time or a duration before now; "" is the zero time.
func pointInTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q: use an RFC 3339 time (2025-06-01T09:00:00Z) or a duration ago (2h)", s)
	}
	return now.Add(-d), nil
}
