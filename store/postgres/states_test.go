package postgres

import "testing"

// The statements' list of final states is the contract's, spelled as SQL.
func TestFinalStatesSQL(t *testing.T) {
	if want := "('completed', 'cancelled', 'discarded', 'expired')"; finalStatesSQL != want {
		t.Fatalf("finalStatesSQL = %s, want %s", finalStatesSQL, want)
	}
}
