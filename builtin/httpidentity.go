package builtin

import (
	"encoding/json"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/rotahq/rota"
)

// The headers that tell a receiver which job sent a request, so that it can drop a duplicate:
// an attempt whose response was lost is sent again, with the same job id and a higher attempt.
const (
	HeaderJobID      = "Rota-Job-Id"
	HeaderJobAttempt = "Rota-Job-Attempt"
)

// identify adds what a careful receiver wants and the args did not set: a User-Agent naming
// rota and its version, a JSON Content-Type for a body that is JSON, and the job's id and
// attempt (job is nil outside a job, in tests).
func identify(req *http.Request, a HTTPArgs, job *rota.JobRow) {
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent())
	}
	if a.Body != "" && req.Header.Get("Content-Type") == "" && json.Valid([]byte(a.Body)) {
		req.Header.Set("Content-Type", "application/json")
	}
	if job != nil {
		req.Header.Set(HeaderJobID, strconv.FormatInt(job.ID, 10))
		req.Header.Set(HeaderJobAttempt, strconv.Itoa(job.Attempt))
	}
}

// userAgent is rota/VERSION, the version of the rota module in the running binary ("(devel)"
// for a build from a work tree).
var userAgent = sync.OnceValue(func() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == rotaModule && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == rotaModule && d.Version != "" {
				v = d.Version
			}
		}
	}
	return "rota/" + v
})

const rotaModule = "github.com/rotahq/rota"
