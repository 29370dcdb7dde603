package main

import (
	"strings"
	"testing"
)

// parsed is a hand-made trace in `go tool trace -d=parsed`'s format:
// goroutine 1 runs from 1000 ns, starts goroutine 2 at 2000, which runs on
// the other P from 3000 to 7000; goroutine 1 waits from 5000; a region
// "phase a" spans 3000 to 6000 on goroutine 1.
const parsed = `M=1 P=0 G=-1 StateTransition Time=1000 GoID=1 Runnable->Running Reason=""
M=1 P=0 G=1 StateTransition Time=2000 GoID=2 NotExist->Runnable Reason=""
TransitionStack=
	main.worker @ 0x1
		/x.go:1

Stack=
	main.spawn @ 0x2
		/x.go:2
	main.main @ 0x3
		/x.go:3

M=2 P=1 G=-1 StateTransition Time=3000 GoID=2 Runnable->Running Reason=""
M=1 P=0 G=1 RegionBegin Time=3000 Task=0 Type="phase a"
Stack=
	main.main @ 0x3
		/x.go:3

M=1 P=0 G=1 StateTransition Time=5000 GoID=1 Running->Waiting Reason="sync"
M=1 P=0 G=1 RegionEnd Time=6000 Task=0 Type="phase a"
M=2 P=1 G=2 StateTransition Time=7000 GoID=2 Running->NotExist Reason=""
`

// TestReport checks the split against the hand count: of 6000 ns, one
// goroutine runs 4000 (1000-3000 goroutine 1, 5000-7000 goroutine 2) and
// two run 2000; "phase a" has two running for 2000 of its 3000 ns and one
// for 1000; goroutine 2 runs alone 2000 ns, started by main.spawn.
func TestReport(t *testing.T) {
	var b strings.Builder
	if err := report(&b, strings.NewReader(parsed), options{top: 8, lag: "main.spawn", within: "phase a"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"0.0 ms read", // 6000 ns
		"1 running:      0.0 ms (66.7%)",
		"2 running:      0.0 ms (33.3%)",
		"phase a                      1       0.0 ms  0:  0.0%  1: 33.3%  2: 66.7%",
		"0.0 ms  main.worker < main.spawn < main.main",
		"0.0 ms  started before the trace",
		`no goroutines started at "main.spawn" inside "phase a"`, // started at 2000, before the region
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := report(&b, strings.NewReader(parsed), options{top: 8, lag: "main.spawn"}); err != nil {
		t.Fatal(err)
	}
	if want := `start delay of the 1 goroutines started at "main.spawn": median 1.0 us, 75th percentile 1.0, 90th 1.0, largest 1.0`; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String()) // created at 2000 ns, running at 3000
	}
	if err := report(&b, strings.NewReader("not a trace\n"), options{top: 8}); err == nil {
		t.Error("a text with no transitions: no error")
	}
}
