package cron_test

import (
	"fmt"
	"time"

	"github.com/rotahq/rota/cron"
)

// A 02:30 daily job on New York's spring-forward day runs at 03:00, once; on fall-back day it
// runs at the first 01:30 only.
func Example() {
	s, err := cron.Parse("30 2 * * *", "America/New_York")
	if err != nil {
		panic(err)
	}
	for _, t := range s.NextN(time.Date(2025, 3, 8, 12, 0, 0, 0, time.UTC), 3) {
		fmt.Println(t)
	}
	// Output:
	// 2025-03-09 03:00:00 -0400 EDT
	// 2025-03-10 02:30:00 -0400 EDT
	// 2025-03-11 02:30:00 -0400 EDT
}

// An hourly job keeps firing through the hour that passes twice.
func ExampleSchedule_Next() {
	s, _ := cron.Parse("0 * * * *", "America/New_York")
	t := time.Date(2025, 11, 2, 4, 30, 0, 0, time.UTC) // 00:30 EDT
	for range 3 {
		t = s.Next(t)
		fmt.Println(t)
	}
	// Output:
	// 2025-11-02 01:00:00 -0400 EDT
	// 2025-11-02 01:00:00 -0500 EST
	// 2025-11-02 02:00:00 -0500 EST
}

func ExampleParse_error() {
	_, err := cron.Parse("0 9 * * *", "Europe/Berln")
	fmt.Println(err)
	_, err = cron.Parse("CRON_TZ=Europe/Berlin 0 9 * * *", "")
	fmt.Println(err)
	// Output:
	// invalid schedule: unknown time zone "Europe/Berln": want an IANA name such as "America/New_York"
	// invalid schedule: "CRON_TZ=Europe/Berlin 0 9 * * *": a time zone prefix is not allowed in the expression; give the zone in the zone field
}
