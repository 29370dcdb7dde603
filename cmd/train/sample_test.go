package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
)

// sampleJSON runs train sample -json and decodes its report.
func sampleJSON(t *testing.T, args ...string) sampleReport {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"sample", "-json"}, args...)...)
	if code != 0 {
		t.Fatalf("sample %v: exit %d: %s", args, code, errs)
	}
	var rep sampleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("sample %v: %v\n%s", args, err, out)
	}
	return rep
}

// decode maps a trace's token names back to states through the run's
// vocabulary, checking every step is a transition of the graph.
func decode(t *testing.T, g *tasks.Graph, tr sampledTrace) []int {
	t.Helper()
	ids, err := tokenizer.New(g).Parse(strings.Join(tr.Tokens, " "))
	if err != nil {
		t.Fatal(err)
	}
	path, err := tokenizer.New(g).Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(path); i++ {
		if !slices.Contains(g.Row(path[i-1]), path[i]) {
			t.Fatalf("%s -> %s is not a transition", tr.Tokens[i-1], tr.Tokens[i])
		}
	}
	return path
}

// TestSampleBigram: golden paths of a trained bigram are the shortest
// paths (2K+1 = 7 transitions at K = 3, the branch's diamonds crossed in
// order, ending at the target's leaf) and verified; sampled rollouts hit
// exactly when they end at their target's leaf, and each transition's
// printed probability is the checkpointed table's (read independently
// with LoadBigram); the same seed prints the same rollouts.
func TestSampleBigram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bg")
	if code, _, errs := runCLI(t, "run", "-W", "3", "-K", "3", "-L", "2", "-steps", "100", "-out", dir); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	b, err := experiment.LoadBigram(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := b.Graph
	rep := sampleJSON(t, dir, "-golden", "-probs", "-n", "6", "-seed", "4")
	for i, tr := range rep.Rollouts {
		path := decode(t, g, tr)
		x := tr.Target
		want := []string{"s0>f", fmt.Sprintf("f>u%d.1l", x)}
		for j := 1; j <= 3; j++ {
			if j > 1 {
				want = append(want, fmt.Sprintf("u%d.%dr>u%d.%dl", x, j-1, x, j))
			}
			want = append(want, fmt.Sprintf("u%d.%dl>u%d.%dr#", x, j, x, j))
		}
		want = append(want, fmt.Sprintf("u%d.3r>t%d", x, x))
		if len(tr.Tokens) != len(want) || tr.Transitions != 7 {
			t.Fatalf("golden %d: got %d transitions %v, want 7: %v", i, tr.Transitions, tr.Tokens, want)
		}
		for j, w := range want {
			if !strings.HasPrefix(tr.Tokens[j], w) {
				t.Errorf("golden %d position %d: got %s, want %s...", i, j, tr.Tokens[j], w)
			}
		}
		if !tr.Hit || tr.Shortest == nil || !*tr.Shortest || !g.Hits(path[len(path)-1], x) {
			t.Errorf("golden %d: hit %v shortest %v: want both", i, tr.Hit, tr.Shortest)
		}
		checkTable(t, g, b.Probs, path, tr.Probs)
	}
	rep = sampleJSON(t, dir, "-probs", "-n", "20", "-seed", "5")
	for i, tr := range rep.Rollouts {
		path := decode(t, g, tr)
		if tr.Transitions != len(path)-1 || tr.Hit != g.Hits(path[len(path)-1], tr.Target) {
			t.Errorf("rollout %d: %d transitions, hit %v; the path has %d and ends at %s", i, tr.Transitions, tr.Hit, len(path)-1, tr.Tokens[len(path)-1])
		}
		checkTable(t, g, b.Probs, path, tr.Probs)
	}
	_, a, _ := runCLI(t, "sample", dir, "-n", "4", "-seed", "9")
	_, c, _ := runCLI(t, "sample", "-n", "4", "-seed", "9", dir)
	if a != c || !strings.Contains(a, "rollout 4 toward") {
		t.Errorf("same seed, flags before or after the folder: got\n%s\nand\n%s", a, c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sample", dir, "-target", "4"}, "-target 4: want 0 (uniform) or a leaf 1 to 3"},
		{[]string{"sample", dir, "-n", "0"}, "-n 0: want >= 1"},
		{[]string{"sample"}, "want a run folder"},
		{[]string{"sample", filepath.Join(dir, "nope")}, "no such file"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// checkTable compares a trace's probabilities with the transition table.
func checkTable(t *testing.T, g *tasks.Graph, probs []float64, path []int, got []float64) {
	t.Helper()
	if len(got) != len(path)-1 {
		t.Fatalf("got %d probabilities for %d transitions", len(got), len(path)-1)
	}
	for i, p := range got {
		if want := probs[g.Entry(path[i], path[i+1])]; math.Abs(p-want) > 1e-12*want {
			t.Errorf("transition %d %s -> %s: got p %v, want the table's %v", i, g.Name(path[i]), g.Name(path[i+1]), p, want)
		}
	}
}

// TestSampleTransformerReplays: the probabilities train sample prints for
// a transformer's rollouts (its KV-cache sampler's) equal a forward pass
// of a fresh graph over each whole rollout, with a prompt; the attention
// matters (one state's probabilities differ between positions), so the
// replay checks more than the logit table.
func TestSampleTransformerReplays(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tf")
	if code, _, errs := runCLI(t, "run", "-model", "transformer", "-trainer", "ppo", "-prompt", "-W", "2", "-K", "2", "-L", "2",
		"-rollouts", "16", "-lr", "0.03", "-steps", "3", "-eval-rollouts", "200", "-out", dir); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	c, err := experiment.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep := sampleJSON(t, dir, "-probs", "-n", "8", "-seed", "2")
	seen := map[[2]int]float64{} // (state, next) -> a probability
	differs := false
	for i, tr := range rep.Rollouts {
		path := decode(t, c.Graph, tr)
		lp, err := c.Replay(tr.Target, path)
		if err != nil {
			t.Fatal(err)
		}
		for j, p := range tr.Probs {
			if want := math.Exp(lp[j]); math.Abs(p-want) > 1e-9*want {
				t.Errorf("rollout %d transition %d: got sampler p %v, want the forward pass's %v", i, j, p, want)
			}
			k := [2]int{path[j], path[j+1]}
			if q, ok := seen[k]; ok && c.Trainer.Trained(path[j]) && math.Abs(q-p) > 1e-6 {
				differs = true
			}
			seen[k] = p
		}
	}
	if !differs {
		t.Errorf("every state's probabilities are the same at every position: the attention plays no part")
	}
	golden := sampleJSON(t, dir, "-golden", "-n", "3")
	for _, tr := range golden.Rollouts {
		if !tr.Hit || tr.Transitions != 5 {
			t.Errorf("golden path toward %d: %d transitions, verified %v; want 5 (2K+1), verified", tr.Target, tr.Transitions, tr.Hit)
		}
	}
}
