package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/rotahq/rota"
)

// statsWindowMax bounds the window of GET /v1/stats: a day of minutes.
const statsWindowMax = 24 * time.Hour

// fleetStats answers with the fleet's counts of the last window (?window=, 1 h by default), or
// of one queue's or kind's attempts (?queue=, ?kind=).
func (a *api) fleetStats(w http.ResponseWriter, r *http.Request) {
	window := time.Hour
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > statsWindowMax || d%time.Minute != 0 {
			a.fail(w, r, fmt.Errorf("%w: window %q: want whole minutes from 1m to %s, as 15m or 6h", rota.ErrInvalid, v, "24h"))
			return
		}
		window = d
	}
	filter := rota.FleetFilter{Queue: r.URL.Query().Get("queue"), Kind: r.URL.Query().Get("kind")}
	st, err := a.client.FleetStats(r.Context(), window, filter)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
