package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestEvalProbsAndCopyMean: eval -json -probs lists every state's row of
// the policy by token name (the pretrained world model's is uniform over
// each state's valid next states: 1/len(next) each), and abcd_mean, the
// per-copy a/b/c/d pooled, is the mean of the per-branch, per-depth rows
// (equal depths everywhere: a plain mean over the rows), beside the
// visit-weighted abcd_visits_mean. (A transformer has no such table:
// TestEvalTransformerCheckpoint checks -probs is refused for one.)
func TestEvalProbsAndCopyMean(t *testing.T) {
	for _, policy := range []string{"pretrained", "sft-limit"} {
		code, out, errs := runCLI(t, "eval", "-W", "3", "-K", "2", "-L", "2", "-policy", policy, "-json", "-probs")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rep evalReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.TransitionProbs) != rep.States {
			t.Fatalf("%s: %d rows for %d states", policy, len(rep.TransitionProbs), rep.States)
		}
		n := 0
		for _, r := range rep.TransitionProbs {
			sum := 0.0
			for i, p := range r.Probs {
				sum += p
				if policy == "pretrained" && math.Abs(p-1/float64(len(r.Next))) > 1e-12 {
					t.Errorf("%s -> %s: got %v, want 1/%d", r.State, r.Next[i], p, len(r.Next))
				}
				if prefix, _, _ := strings.Cut(r.Next[i], ">"); !strings.HasSuffix(r.State, ">"+prefix) && !strings.Contains(r.State, ">"+prefix+"#") {
					t.Errorf("%s -> %s: not a transition of the graph", r.State, r.Next[i])
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("%s %s: row sums to %v", policy, r.State, sum)
			}
			n += len(r.Probs)
		}
		if n != rep.Transitions {
			t.Errorf("%s: %d probabilities for %d transitions", policy, n, rep.Transitions)
		}
		var want [4]float64
		for _, r := range rep.ABCD {
			want[0], want[1], want[2], want[3] = want[0]+r.A, want[1]+r.B, want[2]+r.C, want[3]+r.D
		}
		m := rep.ABCDMean
		for i, got := range []float64{m.A, m.B, m.C, m.D} {
			if w := want[i] / float64(len(rep.ABCD)); math.Abs(got-w) > 1e-12 {
				t.Errorf("%s abcd_mean[%d]: got %v, want %v", policy, i, got, w)
			}
		}
	}
}
