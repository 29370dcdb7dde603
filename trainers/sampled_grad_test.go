package trainers

import (
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestSampledGradientMatchesExact: with no horizon, J = 1 - beta H_f, so the
// REINFORCE estimate sum_t A_t grad log pi(a_t|s_t) / n_rollouts must match
// -beta dH_f/dTheta from the exact analysis, for every baseline (with no
// horizon the fork's bootstrap is unbiased: the walk renews there).
func TestSampledGradientMatchesExact(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	logits := randomLogits(g, 5)
	tr, err := New(DefaultConfig(), g, Setup{Init: logits})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	bg := tr.l.(*bigram)
	bg.advantages() // exact: dH/dtheta = pi (A - mean) with the trainer's A
	probs := bg.model.Probs()
	exact := make([]float64, len(g.Next))
	a := bg.in.data()
	for k, e := range bg.model.TrainableEntries() {
		s := support(g).RowOf(e)
		mean := 0.0
		for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
			mean += 0 * float64(i)
		}
		_ = mean
		exact[e] = probs[e] * a[k] // sum over the row of pi A is 0 (A centred)
	}
	const beta, n = 0.01, 40000
	sp, _ := eval.NewSampler(g, probs)
	b := sp.Rollouts(n, 0, 3)
	lens := make([]int, n)
	for i := range lens {
		lens[i] = b.Len(i)
	}
	states, _ := b.States(g)
	fork := make([]bool, g.NumStates())
	for i, st := range g.States {
		fork[i] = st.Class == tasks.ForkIn
	}
	for _, baseline := range []string{"fork", "state-target", "state", "batch"} {
		adv := tokenAdvantages(lens, b.Hit, states, g.NumStates(), b.Targets, g.W(), beta, baseline, fork, false)
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
			if !g.Trained(support(g).RowOf(e)) {
				continue
			}
			x := -beta * exact[e]
			dot, ne, nx = dot+est[e]*x, ne+est[e]*est[e], nx+x*x
		}
		cos := dot / math.Sqrt(ne*nx)
		t.Logf("baseline %s: cosine(estimate, exact) = %.4f, |estimate|/|exact| = %.3f", baseline, cos, math.Sqrt(ne/nx))
		if cos < 0.95 {
			t.Errorf("baseline %s: the sampled gradient points away from the exact one (cosine %.3f)", baseline, cos)
		}
	}
}
