package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/rotahq/rota"
)

// scheduleRequest is a cron schedule to create or replace; its name is the route's.
type scheduleRequest struct {
	// Expr is a cron expression: 5 fields, an optional leading seconds field, a descriptor such
	// as @daily, or "@every 90s".
	Expr string `json:"expr"`
	// Zone is an IANA time zone name; UTC when empty.
	Zone        string          `json:"zone"`
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args"`
	Queue       string          `json:"queue"`
	Priority    int             `json:"priority"`
	MaxAttempts int             `json:"max_attempts"`
	Tags        []string        `json:"tags"`
	// Missed is "run-once" (one catch-up job for occurrences missed while no leader ran; the
	// default) or "skip".
	Missed rota.MissedPolicy `json:"missed"`
}

func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := a.client.ListSchedules(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if list == nil {
		list = []*rota.ScheduleRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": list})
}

func (a *api) getSchedule(w http.ResponseWriter, r *http.Request) {
	s, err := a.client.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *api) putSchedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	if !a.decode(w, r, &req) {
		return
	}
	if req.Kind == "" {
		invalid(w, `"kind" is required`)
		return
	}
	args, err := kindArgs(req.Kind, req.Args)
	if err != nil {
		invalid(w, "%v", err)
		return
	}
	s, err := a.client.UpsertSchedule(r.Context(), rota.Schedule{
		Name: r.PathValue("name"), Expr: req.Expr, Zone: req.Zone,
		Args:   rota.RawArgs{KindName: req.Kind, JSON: args},
		Opts:   &rota.InsertOpts{Queue: req.Queue, Priority: req.Priority, MaxAttempts: req.MaxAttempts, Tags: req.Tags},
		Missed: req.Missed,
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	a.onSchedule(w, r, a.client.DeleteSchedule)
}

func (a *api) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	a.onSchedule(w, r, a.client.PauseSchedule)
}

func (a *api) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	a.onSchedule(w, r, a.client.ResumeSchedule)
}

// onSchedule applies f to the route's schedule and answers with what is left of it: the
// schedule, or for a deletion that it is gone.
func (a *api) onSchedule(w http.ResponseWriter, r *http.Request, f func(context.Context, string) error) {
	name := r.PathValue("name")
	if err := f(r.Context(), name); err != nil {
		a.fail(w, r, err)
		return
	}
	if r.Method == http.MethodDelete {
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "deleted": true})
		return
	}
	a.getSchedule(w, r)
}
