package rota

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
)

// UniqueOpts make an insert a no-op while an equal job exists. Jobs are equal when they share the
// kind and every dimension switched on here. The zero value is not unique.
type UniqueOpts struct {
	// ByArgs compares the args. ByArgsFields, when set, compares only those top-level fields.
	ByArgs       bool
	ByArgsFields []string
	// ByQueue compares the queue.
	ByQueue bool
	// ByPeriod puts jobs inserted in the same period (aligned to the Unix epoch) together, e.g. an
	// hour for "at most one report per hour".
	ByPeriod time.Duration
	// ByState lists the states in which an existing job counts. Defaults to every state that is
	// not final: a job that completed, failed for good or was cancelled lets a new one in.
	ByState []State
}

func (u *UniqueOpts) enabled() bool {
	return u != nil && (u.ByArgs || len(u.ByArgsFields) > 0 || u.ByQueue || u.ByPeriod > 0)
}

// key derives the unique key of a job. Args are compared by value: key order and spacing in the
// JSON do not matter.
func (u *UniqueOpts) key(p *store.InsertParams, now time.Time) (string, error) {
	var b strings.Builder
	b.WriteString(p.Kind)
	if u.ByQueue {
		b.WriteString("|q=" + p.Queue)
	}
	if u.ByArgs || len(u.ByArgsFields) > 0 {
		canon, err := canonicalArgs(p.Args, u.ByArgsFields)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(canon)
		b.WriteString("|a=" + hex.EncodeToString(sum[:12]))
	}
	if u.ByPeriod > 0 {
		bucket := now.UnixNano() / int64(u.ByPeriod)
		b.WriteString("|p=" + strconv.FormatInt(bucket, 10) + "/" + u.ByPeriod.String())
	}
	return b.String(), nil
}

// canonicalArgs re-encodes args with sorted keys (encoding/json sorts map keys), keeping only
// fields when any are named.
func canonicalArgs(args json.RawMessage, fields []string) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: unique by args: %v", ErrInvalid, err)
	}
	if len(fields) > 0 {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: unique by args fields %v: args are not a JSON object", ErrInvalid, fields)
		}
		// A field the args lack would make every job of the kind a duplicate of the first: a
		// typo in the field's name, or a field its type leaves out (omitempty) when empty.
		for _, f := range fields {
			if _, ok := obj[f]; !ok {
				return nil, fmt.Errorf("%w: unique by args field %q: the args have no such field (they have %s); "+
					"a field left out when empty (omitempty) cannot tell jobs apart", ErrInvalid, f, fieldNames(obj))
			}
		}
		for k := range obj {
			if !slices.Contains(fields, k) {
				delete(obj, k)
			}
		}
	}
	return json.Marshal(v)
}

// fieldNames lists an object's fields, sorted, for a message.
func fieldNames(obj map[string]any) string {
	names := slices.Sorted(maps.Keys(obj))
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
