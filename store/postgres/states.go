package postgres

import (
	"strings"

	"github.com/rotahq/rota/store"
)

// finalStatesSQL is the final states (store.State.Final) as an SQL list, "('completed', …)", for
// the statements that ask whether a job ended: they take the contract's definition instead of a
// copy of it. It is literal SQL, not a parameter, so that the planner sees a constant.
var finalStatesSQL = stateList(store.State.Final)

// stateList returns the states for which keep is true, in store.States order, as an SQL list.
func stateList(keep func(store.State) bool) string {
	var quoted []string
	for _, s := range store.States {
		if keep(s) {
			quoted = append(quoted, quoteLiteral(string(s)))
		}
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}
