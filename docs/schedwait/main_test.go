package main

import (
	"strings"
	"testing"
)

// timehist is hand-made `perf sched timehist -w` output on two CPUs (times
// in s, the last three columns in ms): CPU 1 is idle from 10.000 to
// 10.004; the program's thread 11 waits on CPU 0 from 10.001 to 10.003
// (delay 2 ms) then runs 1 ms; its thread 12 waits 0.1 ms (under the
// threshold) and runs 0.5 ms on CPU 1; thread 11 waits again 0.5 ms on
// CPU 0 from 10.005 to 10.0055 while CPU 1 is busy; another program's
// thread waits 3 ms. Thread 11: 2.5 ms of long delays, 2 ms of them with
// CPU 1 idle.
const timehist = `           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
      10.000000 [0000]  prog[11/10]                      0.000      0.000      0.000
      10.000900 [0000]  other[7]                         0.000      0.000      0.500
      10.001000 [0000]  prog[12/10]                                           awakened: prog[11/10]
      10.004000 [0000]  prog[11/10]                      2.000      2.000      1.000
      10.004000 [0001]  <idle>                           0.000      0.000      4.000
      10.004600 [0001]  prog[12/10]                      0.100      0.100      0.500
      10.006500 [0000]  prog[11/10]                      0.500      0.500      1.000
      10.007000 [0001]  other[7]                         3.000      3.000      0.100
`

func TestReport(t *testing.T) {
	var b strings.Builder
	if err := report(&b, strings.NewReader(timehist), "prog[", 0.2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"prog[11/10]: 3, 2.0, 2.5; 2, 2.5, 2.0\n",
		"prog[12/10]: 1, 0.5, 0.1; 0, 0.0, 0.0\n",
		"all 2 threads: 4, 2.5, 2.6; 2, 2.5, 2.0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

func TestReportRefusesOtherInput(t *testing.T) {
	if err := report(new(strings.Builder), strings.NewReader("no switches here\n"), "prog", 0.2); err == nil {
		t.Error("no error for input without switch lines")
	}
	if err := report(new(strings.Builder), strings.NewReader(timehist), "nothing", 0.2); err == nil {
		t.Error("no error for a task without threads")
	}
}
