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
// walk renews there). The policy leans towards the desired moves, so its
// hitting time is small and 20,000 rollouts take a fraction of a second.
func TestSampledGradientMatchesExact(t *testing.T) {
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
	defer tr.Close()
	bg := tr.l.(*bigram)
	if err := bg.advantages(); err != nil { // exact: dH/dtheta = pi A with the trainer's centred A, its constants
		t.Fatal(err)
	}
	probs := bg.model.Probs()
	exact := make([]float64, len(g.Next))
	for k, e := range bg.model.TrainableEntries() {
		exact[e] = bg.in.data()[k]
	}
	const beta, n = 0.01, 20000
	sp, _ := eval.NewSampler(g, probs)
	b, err := sp.Rollouts(context.Background(), n, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	lens := make([]int, n)
	for i := range lens {
		lens[i] = b.Len(i)
	}
	t.Logf("hitting time %.4g, %d tokens", bg.res.HittingTime, b.Tokens())
	states, _ := b.States(g)
	for _, baseline := range []string{"fork", "state-target", "state", "batch"} {
		adv := tokenAdvantages(lens, b.Hit, states, g.NumStates(), b.Targets, g.W(), beta, baseline, forkStates(g), false, nil)
		est := make([]float64, len(g.Next))
		for tok, e := range b.Entries {
			s := int(states[tok])
			// grad log pi(a|s) w.r.t. theta(s, e') = 1{e' = e} - pi(e')
			for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
				d := -probs[i]
				if i == int(e) {
					d++
				}
				est[i] += adv[tok] * d / n
			}
		}
		var dot, ne, nx float64
		for e := range est {
			if !tr.Trained(support(g).RowOf(e)) {
				continue
			}
			x := -beta * exact[e]
			dot, ne, nx = dot+est[e]*x, ne+est[e]*est[e], nx+x*x
		}
		cos, ratio := dot/math.Sqrt(ne*nx), math.Sqrt(ne/nx)
		t.Logf("baseline %s: cosine(estimate, exact) = %.4f, |estimate|/|exact| = %.3f", baseline, cos, ratio)
		if cos < 0.95 || ratio < 0.9 || ratio > 1.15 {
			t.Errorf("baseline %s: the sampled gradient is not the exact one: cosine %.3f, magnitude ratio %.3f", baseline, cos, ratio)
		}
	}
}
