package redis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rotahq/rota/store"
)

// Dependencies: a job inserted with dependencies that have not all ended as it needs is pending,
// with dn (how many it still waits for, absent when one) and D (its dependencies, in order) on
// its hash. Each job that one waits for holds its dependents in its field dp: the dependent's id
// after '=' while it has one and never had more, else '1' and the set dep:<id>, with the release
// entries of its plain dependents in the hash rel:<id> (addEdge in prelude.lua). Only the
// scripts that add edges (inserts, RetryWorkflow) and those that end a job read dp: the ending script settles exactly those dependents (finish()), so a completion costs
// work in proportion to its dependents and a waiting job costs nothing; one with more dependents
// than a script settles leaves the rest to the settle script (settle.go). A job with no
// dependency fields never takes these paths.

// depTextsLua declares store.DependencyError and DependencyDeletedError as the Lua locals DEPTEXT
// and DEPDELTEXT, JSON strings with \u0001 in place of the dependency's id and \u0002 of its
// state, for the scripts to fill in: the words are package store's, and the scripts only paste.
// They are constants of the library's source, not arguments of every call that may settle; each
// byte is escaped.
var depTextsLua = func() string {
	quote := func(s string) string {
		var b strings.Builder
		b.WriteByte('\'')
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "\\%d", s[i])
		}
		b.WriteByte('\'')
		return b.String()
	}
	return "local DEPTEXT, DEPDELTEXT = " + quote(depText(store.DependencyError(depTextID, depTextState))) +
		", " + quote(depText(store.DependencyDeletedError(depTextID))) + "\n"
}()

// depTextID and depTextState stand for the id and the state in the texts depText marks.
const (
	depTextID    = 7306185425118409213
	depTextState = store.State("\x02state\x02")
)

func depText(s string) string {
	s = strings.Replace(s, strconv.FormatInt(depTextID, 10), "\x01", 1)
	s = strings.Replace(s, string(depTextState), "\x02", 1)
	return jsonText(s)
}

// hasDeps reports whether any job of params depends on another or joins one: such a call is
// checked and applied by one script of its own, since one bad id fails the whole call and
// DependsOnIndex counts within it.
func hasDeps(params []store.InsertParams) bool {
	for _, p := range params {
		if len(p.DependsOn) > 0 || len(p.DependsOnIndex) > 0 || p.DependencyOf != 0 {
			return true
		}
	}
	return false
}

// depFields reports whether p has any dependency field: workflow, step, dependencies, the
// pending job it joins or IgnoreFailedDeps.
func depFields(p store.InsertParams) bool {
	return p.Workflow != "" || p.Step != "" || len(p.DependsOn) > 0 || len(p.DependsOnIndex) > 0 ||
		p.IgnoreFailedDeps || p.DependencyOf != 0
}

// depsArg is a job's dependency fields as insertdeps.lua reads them: "" when it has none, else
// seven length-prefixed strings.
func depsArg(p store.InsertParams) string {
	if !depFields(p) {
		return ""
	}
	var ids, idx []string
	for _, id := range p.DependsOn {
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	for _, i := range p.DependsOnIndex {
		idx = append(idx, strconv.Itoa(i))
	}
	ignore, of, number := "", "", ""
	if p.IgnoreFailedDeps {
		ignore = "1"
	}
	if p.DependencyOf != 0 {
		of = strconv.FormatInt(p.DependencyOf, 10)
		if p.NumberStep {
			number = "1"
		}
	}
	var b strings.Builder
	for _, f := range []string{p.Workflow, p.Step, strings.Join(ids, ","), strings.Join(idx, ","), ignore, of, number} {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	return b.String()
}

// parseIDs reads the comma-separated ids of a job's D field.
func parseIDs(v string) ([]int64, error) {
	if v == "" {
		return nil, nil
	}
	var out []int64
	for f := range strings.SplitSeq(v, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}
