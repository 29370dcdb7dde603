package trainers

import (
	"context"
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestSampledGradientMatchesExact: with no horizon, J = 1 - beta H_f, so the
// REINFORCE estimate sum_t A_t grad log pi(a_t|s_t) / n_rollouts must match
// -beta dH_f/dTheta from the exact analysis, in direction and in magnitude,
// for every baseline (with no horizon the fork's bootstrap is unbiased: the
// walk renews there). With a horizon of the hitting time, which cuts a
// third of the rollouts, baseline exact keeps the direction (cosine 0.95
// at least; a cut rollout's last advantage takes the value of the state it
// ended in), and only the visits after the cuts are missing from the
// magnitude (half of it here); the fork baseline's is logged. The policy
// leans towards the desired moves, so its hitting time is small and
// 20,000 rollouts take a fraction of a second.
func TestSampledGradientMatchesExact(t *testing.T) {
	g, tr, bg, probs := leaningBigram(t)
	const beta, n = 0.01, 20000
	exact := exactGradient(bg, beta)
	sp, _ := eval.NewSampler(g, probs)
	values := exactValues(nil, bg.res, g.W(), g.NumStates())
	for _, c := range []struct {
		horizon   int
		baselines []string
	}{{0, []string{"exact", "fork", "state-target", "state", "batch"}}, {int(bg.res.HittingTime), []string{"exact", "fork"}}} {
		b, err := sp.Rollouts(context.Background(), n, c.horizon, 3)
		if err != nil {
			t.Fatal(err)
		}
		lens := make([]int, n)
		cut := 0
		for i := range lens {
			lens[i] = b.Len(i)
			if !b.Hit[i] {
				cut++
			}
		}
		t.Logf("hitting time %.4g, horizon %d: %d tokens, %d rollouts cut", bg.res.HittingTime, c.horizon, b.Tokens(), cut)
		if c.horizon > 0 && cut < n/10 {
			t.Fatalf("horizon %d cut %d rollouts of %d: want a tenth at least", c.horizon, cut, n)
		}
		states, last := b.States(g)
		for _, baseline := range c.baselines {
			adv := batchAdvantages(g, b, lens, states, last, values, beta, baseline)
			cos, ratio := alongExact(tr, reinforceEstimate(g, probs, adv, b.Entries, states, n), exact)
			t.Logf("baseline %s, horizon %d: cosine(estimate, exact) = %.4f, |estimate|/|exact| = %.3f", baseline, c.horizon, cos, ratio)
			switch {
			case c.horizon > 0 && baseline != "exact": // logged: the cut returns bias it
			case c.horizon > 0 && (cos < 0.95 || ratio < 0.3 || ratio > 1.15):
				t.Errorf("baseline %s, horizon %d: the sampled gradient is not along the exact one: cosine %.3f, magnitude ratio %.3f", baseline, c.horizon, cos, ratio)
			case c.horizon == 0 && (cos < 0.95 || ratio < 0.9 || ratio > 1.15):
				t.Errorf("baseline %s, horizon %d: the sampled gradient is not the exact one: cosine %.3f, magnitude ratio %.3f", baseline, c.horizon, cos, ratio)
			}
		}
	}
}

// batchAdvantages are a batch's advantages under baseline: exact (from
// the exact values), or the trainer's returns and baselines, not
// normalised.
func batchAdvantages(g *tasks.Graph, b *eval.Batch, lens []int, states, last []int32, values []float64, beta float64, baseline string) []float64 {
	if baseline == "exact" {
		return exactAdvantages(lens, b.Hit, states, last, b.Targets, values, g.NumStates(), beta, nil)
	}
	return tokenAdvantages(lens, b.Hit, states, g.NumStates(), b.Targets, g.W(), beta, baseline, forkStates(g), false, nil)
}

// leaningBigram is the sampled-gradient tests' trainer on W=3, K=2, L=2:
// a bigram whose policy leans towards the desired moves (so its hitting
// time is small and many rollouts are cheap), its exact analysis done
// (bg.advantages: dH/dtheta = pi A with the trainer's centred A, its
// constants), and its policy.
func leaningBigram(t *testing.T) (*tasks.Graph, *Trainer, *bigram, []float64) {
	t.Helper()
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	logits := randomLogits(g, 5)
	for s := range g.States {
		lo, hi := g.DesiredRange(s)
		for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
			logits[i] *= 0.5
			if a := g.Next[i]; g.Trained(s) && a >= lo && a < hi {
				logits[i] += 1.5
			}
		}
	}
	tr, err := New(DefaultConfig(), g, Setup{Init: logits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	bg := tr.l.(*bigram)
	if err := bg.advantages(); err != nil {
		t.Fatal(err)
	}
	return g, tr, bg, bg.model.Probs()
}

// exactGradient is -beta dH_f/dTheta per transition (CSR order; 0 on the
// rows not trained): the exact trainer's gradient of 1 - beta H_f, after
// bg.advantages.
func exactGradient(bg *bigram, beta float64) []float64 {
	exact := make([]float64, len(bg.g.Next))
	for k, e := range bg.model.TrainableEntries() { // pi A with the trainer's centred A, its constants
		exact[e] = -beta * bg.in.data()[k]
	}
	return exact
}

// reinforceEstimate is the REINFORCE estimate sum_t A_t grad log
// pi(a_t|s_t) / rollouts per transition (CSR order) of a batch's tokens:
// their entries, states and advantages, under the policy probs.
func reinforceEstimate(g *tasks.Graph, probs, adv []float64, entries, states []int32, rollouts int) []float64 {
	est := make([]float64, len(g.Next))
	for tok, e := range entries {
		s := int(states[tok])
		// grad log pi(a|s) w.r.t. theta(s, e') = 1{e' = e} - pi(e')
		for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
			d := -probs[i]
			if i == int(e) {
				d++
			}
			est[i] += adv[tok] * d / float64(rollouts)
		}
	}
	return est
}

// alongExact is the cosine of an estimate with the exact gradient and the
// ratio of their norms, over the rows tr trains.
func alongExact(tr *Trainer, est, exact []float64) (cos, ratio float64) {
	var dot, ne, nx float64
	for e := range est {
		if !tr.Trained(support(tr.g).RowOf(e)) {
			continue
		}
		dot, ne, nx = dot+est[e]*exact[e], ne+est[e]*est[e], nx+exact[e]*exact[e]
	}
	return dot / math.Sqrt(ne*nx), math.Sqrt(ne / nx)
}

// TestHindsightGradientMatchesExact: walks with hindsight targets
// (Config.Hindsight) hold rollouts of the law of independent ones, so with
// no horizon their REINFORCE estimate matches the exact gradient as
// independent rollouts' does (TestSampledGradientMatchesExact's policy and
// bounds), for every baseline, on fewer sampled tokens (here about 0.72 of
// the rollouts': with W=3 a walk to every leaf is not much shorter than
// three rollouts; at the paper's W=15 it is about a fifth).
func TestHindsightGradientMatchesExact(t *testing.T) {
	g, tr, bg, probs := leaningBigram(t)
	const beta, walks = 0.01, 7000
	exact := exactGradient(bg, beta)
	sp, _ := eval.NewSampler(g, probs)
	values := exactValues(nil, bg.res, g.W(), g.NumStates())
	b, err := new(eval.Buffers).Walks(context.Background(), sp, walks, math.MaxInt32, 3)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b.Targets)
	lens := make([]int, n)
	for i := range lens {
		lens[i] = b.Len(i)
		if !b.Hit[i] {
			t.Fatalf("rollout %d never hit", i)
		}
	}
	t.Logf("hitting time %.4g: %d walks, %d rollouts of %d tokens, %d tokens drawn", bg.res.HittingTime, walks, n, b.Tokens(), b.Drawn())
	if b.Drawn() >= b.Tokens()*4/5 {
		t.Errorf("walks drew %d tokens for rollouts of %d: want far fewer", b.Drawn(), b.Tokens())
	}
	states, last := b.States(g)
	for _, baseline := range []string{"exact", "fork", "state-target", "state", "batch"} {
		adv := batchAdvantages(g, b, lens, states, last, values, beta, baseline)
		cos, ratio := alongExact(tr, reinforceEstimate(g, probs, adv, b.Entries, states, n), exact)
		t.Logf("baseline %s: cosine(estimate, exact) = %.4f, |estimate|/|exact| = %.3f", baseline, cos, ratio)
		if cos < 0.95 || ratio < 0.9 || ratio > 1.15 {
			t.Errorf("baseline %s: the hindsight gradient is not the exact one: cosine %.3f, magnitude ratio %.3f", baseline, cos, ratio)
		}
	}
}
