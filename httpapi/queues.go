package httpapi

import (
	"context"
	"net/http"

	"github.com/rotahq/rota/store"
)

func (a *api) listQueues(w http.ResponseWriter, r *http.Request) {
	stats, err := a.client.QueueStats(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if stats == nil {
		stats = []store.QueueStats{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": stats})
}

func (a *api) pauseQueue(w http.ResponseWriter, r *http.Request) {
	a.onQueue(w, r, a.client.PauseQueue, true)
}

func (a *api) resumeQueue(w http.ResponseWriter, r *http.Request) {
	a.onQueue(w, r, a.client.ResumeQueue, false)
}

// onQueue applies f to the route's queue and answers with the queue's new state.
func (a *api) onQueue(w http.ResponseWriter, r *http.Request, f func(context.Context, string) error, paused bool) {
	name := r.PathValue("name")
	if err := f(r.Context(), name); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": name, "paused": paused})
}

func (a *api) status(w http.ResponseWriter, r *http.Request) {
	st, err := a.client.Status(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
