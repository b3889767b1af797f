package sqlite

import (
	"database/sql"
	"strings"
	"testing"
)

func TestByLimitWritesSmallLimitsIn(t *testing.T) {
	b := newByLimit(`SELECT id FROM jobs WHERE queue = :queue LIMIT :limit`)
	q, args := b.limited(87, sql.Named("queue", "default"))
	if want := `SELECT id FROM jobs WHERE queue = :queue LIMIT 87`; q != want {
		t.Errorf("limited(87) = %q, want %q", q, want)
	}
	if len(args) != 1 {
		t.Errorf("limited(87) args = %v, want only :queue", args)
	}
	q, args = b.limited(literalLimitMax+1, sql.Named("queue", "default"))
	if !strings.HasSuffix(q, "LIMIT :limit") || len(args) != 2 || args[1].(sql.NamedArg).Value != literalLimitMax+1 {
		t.Errorf("limited(%d) = %q, %v; want the limit bound", literalLimitMax+1, q, args)
	}
}
