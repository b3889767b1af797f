package main

import (
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rotahq/rota/bench"
)

// benchProgress draws a bar on stderr for each long step of a benchmark (preloading, queueing a
// backlog, draining it), when stderr is a terminal; piped or captured output stays clean.
func (a *app) benchProgress() bench.Progress {
	f, ok := a.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var (
		mu   sync.Mutex
		bar  *progressbar.ProgressBar
		step string
	)
	return func(s string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if bar == nil || s != step {
			if bar != nil {
				_ = bar.Finish()
			}
			step = s
			bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(f),
				progressbar.OptionSetDescription(s),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("jobs"),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish())
		}
		_ = bar.Set(done)
		if total > 0 && done >= total {
			_ = bar.Finish()
			bar = nil
		}
	}
}
