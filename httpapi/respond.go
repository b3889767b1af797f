package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// errorBody is every error response.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// Compact and without HTML escapes, so that args and results read back byte for byte as they
	// were stored: `a>b&c`, not `a\u003eb\u0026c` (this is JSON for programs, never HTML).
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the status is sent; a failed write means the caller left
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}

// fail answers with the status err deserves. Errors that are not the caller's are logged: the
// caller sees what happened, the operator sees it too.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, rota.ErrInvalid), errors.Is(err, store.ErrInvalidLimit), errors.Is(err, store.ErrInvalidList):
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large",
			fmt.Sprintf("request body over the limit of %d bytes", tooBig.Limit))
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, store.ErrJobRunning):
		writeError(w, http.StatusConflict, "job_running", err.Error())
	case errors.Is(err, store.ErrNotPending):
		// A batch whose callback has been released is closed: its jobs have all ended.
		writeError(w, http.StatusConflict, "not_pending", err.Error())
	case errors.Is(err, rota.ErrBusy):
		writeError(w, http.StatusTooManyRequests, "busy", err.Error())
	case errors.Is(err, rota.ErrNoRegistry), errors.Is(err, rota.ErrNoStats):
		writeError(w, http.StatusNotImplemented, "unsupported", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		// The store cannot take writes now (a full disk, a read-only file, a lost connection):
		// not the caller's fault, and it may pass, so the caller may try again later. The
		// operator is told, for it will not pass by itself.
		a.logger.Warn("rota: api: the store cannot take the request", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	case r.Context().Err() != nil:
		// The caller went away; nobody reads the answer.
		writeError(w, http.StatusServiceUnavailable, "cancelled", err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		a.logger.Warn("rota: api: the store did not answer in time", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	default:
		a.logger.Error("rota: api: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// invalid answers 400 for input that did not parse.
func invalid(w http.ResponseWriter, format string, args ...any) {
	writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf(format, args...))
}

// decode reads the JSON body into v, refusing unknown fields (a misspelt option would otherwise
// be dropped without a word) and trailing data. It answers the error itself and reports
// whether decoding succeeded.
func (a *api) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.bodyMax))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("data after the JSON value")
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		a.fail(w, r, err)
	case errors.Is(err, io.EOF):
		invalid(w, "the request needs a JSON body")
	default:
		invalid(w, "request body: %v", err)
	}
	return false
}

// jobID reads the {id} of the route.
func jobID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		invalid(w, "job id %q is not a positive integer", r.PathValue("id"))
		return 0, false
	}
	return id, true
}
