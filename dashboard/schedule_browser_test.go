package dashboard

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/browsertest"
)

// An operator in a real browser goes from the schedules list to a schedule's page, reads its
// occurrences, pauses it and runs it once by hand.
func TestScheduleInABrowser(t *testing.T) {
	s := newSite(t) // before the browser, so the browser closes first
	ctx := browsertest.Context(t)
	bg := context.Background()
	done, ahead := seedSchedule(t, s)

	step(t, ctx, "sign in",
		chromedp.Navigate(s.url+"/schedules"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.CSS(`#schedules tr[data-name="nightly"] a`)))
	step(t, ctx, "open the schedule",
		chromedp.Click(chromedp.CSS(`#schedules tr[data-name="nightly"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#occurrences tr[data-id="`+itoa(ahead)+`"]`)))
	if occ := text(t, ctx, chromedp.ID("occurrences")); !strings.Contains(occ, "scheduled") || !strings.Contains(occ, "completed") {
		t.Fatalf("the occurrences read %q", occ)
	}
	step(t, ctx, "see the finished occurrence",
		chromedp.WaitVisible(chromedp.CSS(`#occurrences tr[data-id="`+itoa(done)+`"] .state.completed`)))
	step(t, ctx, "pause it",
		chromedp.Click(chromedp.ID("pause")), chromedp.WaitVisible(chromedp.ID("schedule-paused")))
	sc, err := s.client.GetSchedule(bg, "nightly")
	if err != nil || !sc.Paused {
		t.Fatalf("the schedule in the store after Pause: %+v, %v", sc, err)
	}
	step(t, ctx, "run it now",
		chromedp.Click(chromedp.ID("run-now")), chromedp.WaitVisible(chromedp.ID("job-state")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.client.List(bg, rota.ListParams{Desc: true, Limit: 1})
	if err != nil || len(jobs) != 1 || !strings.HasSuffix(loc, "/jobs/"+itoa(jobs[0].ID)) || jobs[0].Kind != "ok" || jobs[0].ID <= ahead {
		t.Fatalf("after Run now the browser is at %s and the newest job is %+v (%v)", loc, jobs, err)
	}
}
