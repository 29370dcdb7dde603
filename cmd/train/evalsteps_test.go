package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestEvalPlansLargeGraphs: eval on W=K=1000, L=5 says before building
// anything how large the graph is (W(2KL+2K+2)+1 = 12002001 states) and
// how much memory it takes, then each step of the analysis as it begins;
// a small graph says nothing; a report that would not fit the budget (the
// a, b, c, d tables, or every transition with -probs) is refused in one
// line naming -max-bytes.
func TestEvalPlansLargeGraphs(t *testing.T) {
	var w bytes.Buffer
	steps, err := planEval(&w, tasks.Config{W: 1000, K: 1000, L: 5, MaxBytes: 64 << 30}, false)
	if err != nil || steps == nil {
		t.Fatalf("planEval: %v, steps %v; want a plan", err, steps)
	}
	steps.say("solving the hitting times")
	got := w.String()
	for _, want := range []string{"graph W=1000,K=1000,L=5: 12002001 states, ", "GiB of memory, within the budget of 64.0 GiB (-max-bytes)", "s: solving the hitting times\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want %q in it", got, want)
		}
	}
	w.Reset()
	if steps, err := planEval(&w, tasks.Config{W: 3, K: 2, L: 2}, true); err != nil || steps != nil || w.Len() > 0 {
		t.Errorf("small graph: steps %v, %v, said %q; want nothing", steps, err, w.String())
	}
	code, out, errs := runCLI(t, "eval", "-W", "300", "-K", "300", "-L", "5", "-probs", "-max-bytes", "1500000000")
	if want := "train: eval: the report with every transition's probability (-probs) needs about"; code != 2 || out != "" || !strings.HasPrefix(errs, want) ||
		!strings.HasSuffix(errs, "(-max-bytes)\n") || strings.Count(errs, "\n") != 1 {
		t.Errorf("-probs over the budget: exit %d, stdout %q, stderr %q; want 2 and one line %q...", code, out, errs, want)
	}
}

// TestEvalJSONBeyondFloat64: at K=400, L=5 the SFT limit overflows float64
// (about 7.2^400): eval -json still prints its one object, the limit null.
func TestEvalJSONBeyondFloat64(t *testing.T) {
	code, out, errs := runCLI(t, "eval", "-W", "2", "-K", "400", "-L", "5", "-json")
	var obj map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &obj) != nil {
		t.Fatalf("exit %d, stderr %q; want one JSON object", code, errs)
	}
	if th := obj["theory"].(map[string]any); th["sft_limit"] != nil {
		t.Errorf("theory.sft_limit %v, want null", th["sft_limit"])
	}
}

// TestEvalMonteCarloInterrupted: a SIGINT during eval -mc stops the
// rollouts and says so in one line, exit 130, with nothing on stdout; a
// real process under SIGINT does the same.
func TestEvalMonteCarloInterrupted(t *testing.T) {
	interruptMonteCarlo = true
	code, out, errs := runCLI(t, "eval", "-W", "3", "-K", "2", "-L", "2", "-mc", "1000")
	interruptMonteCarlo = false
	want := "train: eval: interrupted by interrupt during the Monte Carlo of 1000 rollouts: no result printed"
	if code != 130 || out != "" || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 130, nothing printed and one line %q...", code, out, errs, want)
	}
	if testing.Short() {
		return
	}
	// 10^8 rollouts of about 5e4 transitions: the signal, 1.5 s in, comes
	// during the Monte Carlo (the analysis takes 0.1 s).
	stderr, err := signalAfter(t, 1500*time.Millisecond, syscall.SIGINT, "eval", "-W", "15", "-K", "15", "-L", "5", "-mc", "100000000", "-horizon", "1000000")
	want = "train: eval: interrupted by interrupt during the Monte Carlo of 100000000 rollouts"
	if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 130 || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("process: %v, stderr %q; want exit 130 and %q", err, stderr.String(), want)
	}
}
