package cron

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // zones resolve the same on a machine or container without a zone database

	robfig "github.com/robfig/cron/v3"
)

// ErrInvalid is wrapped by every error Parse returns, so a caller (the API, the CLI) can tell a bad
// schedule, which is the user's to fix, from its own failures.
var ErrInvalid = errors.New("invalid schedule")

// Schedule is a parsed expression in a zone. It is immutable and safe for concurrent use.
type Schedule struct {
	expr string // normalized: fields joined by single spaces
	zone string // as given, "UTC" when empty
	loc  *time.Location

	every time.Duration // > 0 for @every; the fields below are unused then

	second, minute, hour, dom, month, dow uint64 // bit i set when value i matches
	dayOr                                 bool   // both day fields restricted: either may match
	special                                      // L, nL and n#k in the day fields

	// hourly is true when the hour field matches every hour; see the package doc for what that
	// changes in DST gaps and overlaps.
	hourly bool
}

// parser accepts five fields or six with seconds first, and the descriptors. @every never reaches
// it: Parse handles that itself to anchor it to the epoch and to reject what robfig rounds.
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour |
	robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// item is one comma-separated part of a field. robfig is looser than its own grammar (it reads
// "*-5" as "*", skips empty list items and takes "+5" as 5); checking first makes those errors.
var item = regexp.MustCompile(`^(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?$`)

// fields name the six fields, each with a parser for it alone, so an error can say which field is
// wrong: robfig's own errors quote the bad value but not its field.
var fields = []struct {
	name   string
	parser robfig.Parser
}{
	{"second", robfig.NewParser(robfig.Second)},
	{"minute", robfig.NewParser(robfig.Minute)},
	{"hour", robfig.NewParser(robfig.Hour)},
	{"day-of-month", robfig.NewParser(robfig.Dom)},
	{"month", robfig.NewParser(robfig.Month)},
	{"day-of-week", robfig.NewParser(robfig.Dow)},
}

// Parse parses expr (see the package doc for the forms) in the IANA zone named by zone, UTC when
// empty. Errors wrap ErrInvalid and say what is wrong: the parser's reason or the bad zone name.
func Parse(expr, zone string) (*Schedule, error) {
	s, err := parse(expr, zone)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s, nil
}

func parse(expr, zone string) (*Schedule, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	words := strings.Fields(expr)
	s := &Schedule{expr: strings.Join(words, " "), zone: loc.String(), loc: loc}
	if len(words) == 0 {
		return nil, errors.New("empty expression")
	}
	upper := strings.ToUpper(words[0])
	if strings.HasPrefix(upper, "CRON_TZ=") || strings.HasPrefix(upper, "TZ=") {
		return nil, fmt.Errorf("%q: a time zone prefix is not allowed in the expression; "+
			"give the zone in the zone field", s.expr)
	}
	if words[0] == "@every" {
		s.every, err = parseEvery(words[1:])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s.expr, err)
		}
		return s, nil
	}
	toParse := s.expr
	var blankDom, blankDow bool
	if !strings.HasPrefix(words[0], "@") {
		if len(words) == 5 || len(words) == 6 {
			if words, s.special, blankDom, blankDow, err = takeSpecials(words); err != nil {
				return nil, fmt.Errorf("%q: %w", s.expr, err)
			}
			toParse = strings.Join(words, " ")
		}
		if err := checkFields(words); err != nil {
			return nil, fmt.Errorf("%q: %w", s.expr, err)
		}
	}
	parsed, err := parser.Parse(toParse)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s.expr, err)
	}
	spec, ok := parsed.(*robfig.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%q: unsupported expression", s.expr)
	}
	const star = 1 << 63 // robfig marks a field written as * or ?
	s.second, s.minute, s.hour = spec.Second&^star, spec.Minute&^star, spec.Hour&^star
	s.dom, s.month, s.dow = spec.Dom&^star, spec.Month&^star, spec.Dow&^star
	if blankDom {
		s.dom = 0 // only L: no plain day of the month
	}
	if blankDow {
		s.dow = 0 // only nL or n#k: no plain weekday
	}
	s.dayOr = spec.Dom&star == 0 && spec.Dow&star == 0
	s.hourly = s.hour == 1<<24-1
	if err := s.checkFires(); err != nil {
		return nil, fmt.Errorf("%q: %w", s.expr, err)
	}
	return s, nil
}

func loadZone(zone string) (*time.Location, error) {
	switch zone {
	case "":
		return time.UTC, nil
	case "Local":
		return nil, errors.New(`zone "Local" depends on the machine; name an IANA zone such as "Europe/Berlin"`)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: want an IANA name such as \"America/New_York\"", zone)
	}
	return loc, nil
}

// parseEvery reads the duration of "@every d". Sub-second and fractional durations are rejected
// rather than rounded as robfig does, so the schedule fires exactly when it says.
func parseEvery(args []string) (time.Duration, error) {
	if len(args) != 1 {
		return 0, errors.New(`@every takes one duration, such as "@every 90s"`)
	}
	d, err := time.ParseDuration(args[0])
	switch {
	case err != nil:
		return 0, err
	case d <= 0:
		return 0, errors.New("the duration must be positive")
	case d < time.Second:
		return 0, errors.New("the duration must be at least one second")
	case d%time.Second != 0:
		return 0, errors.New("the duration must be a whole number of seconds")
	}
	return d, nil
}

// checkFields checks each field on its own, first for what robfig would silently accept, then
// with robfig, so that an error names the field.
func checkFields(values []string) error {
	if len(values) != 5 && len(values) != 6 {
		return fmt.Errorf("expected 5 fields, or 6 with seconds first, found %d", len(values))
	}
	for i, v := range values {
		f := fields[i+6-len(values)]
		for part := range strings.SplitSeq(v, ",") {
			if !item.MatchString(part) {
				return fmt.Errorf("%s field %q: %q is not a value, range or step", f.name, v, part)
			}
		}
		if _, err := f.parser.Parse(v); err != nil {
			return fmt.Errorf("%s field %q: %s", f.name, v, fieldReason(f.name, err))
		}
	}
	return nil
}

// fieldReason is robfig's reason for refusing a field, in the terms of the forms Parse takes:
// robfig knows 0-6 for the days of the week where Parse takes 7 for Sunday too, and it reports a
// word it does not know with Go's number parser's error.
func fieldReason(field string, err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "failed to parse int from "); i >= 0 {
		word, _, _ := strings.Cut(msg[i+len("failed to parse int from "):], ":")
		return fmt.Sprintf("%q is not a number or a name (JAN, MON); the day fields also take L, 5L and 1#2", word)
	}
	if field == "day-of-week" {
		msg = strings.Replace(msg, "above maximum (6)", "above maximum (7, which is Sunday as 0 is)", 1)
	}
	return msg
}

// daysIn is the most days each month can have, leap years included.
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// checkFires rejects day fields no date satisfies, such as February 30th, so that Next's "never"
// is not a schedule the user believes is active. Each field is non-empty once robfig has parsed it,
// and every month has every weekday, so only a restricted day-of-month can make a schedule empty.
func (s *Schedule) checkFires() error {
	if s.dayOr || s.domLast || s.dowLast != 0 || s.special.any() {
		return nil // any matching weekday will do; every month has a last day and its weekdays
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) != 0 && s.dom&(1<<(daysIn[m]+1)-1) != 0 {
			return nil
		}
	}
	return errors.New("never fires: none of its days of the month occur in its months")
}

// String returns the expression and zone, e.g. "30 2 * * * (America/New_York)".
func (s *Schedule) String() string { return s.expr + " (" + s.zone + ")" }

// Expr returns the expression with its fields separated by single spaces.
func (s *Schedule) Expr() string { return s.expr }

// Zone returns the zone's IANA name, "UTC" when none was given.
func (s *Schedule) Zone() string { return s.zone }

// Location returns the zone as a *time.Location; Next returns instants in it.
func (s *Schedule) Location() *time.Location { return s.loc }

// Interval returns d and true for "@every d", and false for field schedules.
func (s *Schedule) Interval() (time.Duration, bool) { return s.every, s.every > 0 }
