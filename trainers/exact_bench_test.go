package trainers

import (
	"context"
	"fmt"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// BenchmarkGradientNoise measures how near one batch's sampled policy
// gradient is to the exact one, at the paper's size from the pretrained
// start (the bigram's PPO's first batch, the paper's horizon of 2 hitting
// times): the cosine of each estimate with -beta dH_f/dTheta (the exact
// trainer's gradient) and its norm over the exact gradient's, with the
// advantages of the fork baseline (the default), of baseline exact, and of
// the exact advantages of every move at each visited state (the noise that
// is left is which states the batch visits: no critic does better). Each
// iteration draws a new batch of the given rollouts (seeded by the
// iteration); the walks with hindsight targets below are compared on the
// fork baseline. Run it with -benchtime 1x or a few:
//
//	go test ./trainers -run '^$' -bench GradientNoise -benchtime 3x
func BenchmarkGradientNoise(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	tr, err := New(DefaultConfig(), g, Setup{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	bg := tr.l.(*bigram)
	if err := bg.advantages(); err != nil { // the exact gradient: pi A with the trainer's constants
		b.Fatal(err)
	}
	probs, res := bg.probs, bg.res
	const beta = 3e-4
	exact := exactGradient(bg, beta)
	n := g.NumStates()
	values := exactValues(nil, res, g.W(), n)
	sp, err := eval.NewSampler(g, probs)
	if err != nil {
		b.Fatal(err)
	}
	for _, rollouts := range []int{256, 2048} {
		b.Run(fmt.Sprintf("rollouts=%d", rollouts), func(b *testing.B) {
			var cf, rf, ce, re, cv, rv float64
			it, drawn := 0, 0
			for b.Loop() {
				batch, err := sp.Rollouts(context.Background(), rollouts, int(2*res.HittingTime), uint64(100+it))
				if err != nil {
					b.Fatal(err)
				}
				it++
				drawn += batch.Drawn()
				states, last := batch.States(g)
				lens := make([]int, rollouts)
				for i := range lens {
					lens[i] = batch.Len(i)
				}
				fork := tokenAdvantages(lens, batch.Hit, states, n, batch.Targets, g.W(), beta, "fork", forkStates(g), false, nil)
				c, r := alongExact(tr, reinforceEstimate(g, probs, fork, batch.Entries, states, rollouts), exact)
				cf, rf = cf+c, rf+r
				ex := exactAdvantages(lens, batch.Hit, states, last, batch.Targets, values, n, beta, nil)
				c, r = alongExact(tr, reinforceEstimate(g, probs, ex, batch.Entries, states, rollouts), exact)
				ce, re = ce+c, re+r
				// every move's exact advantage at each visited (state, target),
				// weighted by the policy: pi(a|s) A_x(s, a), centred per row.
				vis := make([]float64, len(g.Next))
				k := 0
				for r, l := range lens {
					hx := values[(batch.Targets[r]-1)*n : batch.Targets[r]*n]
					for _, s := range states[k : k+l] {
						for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
							next := 0.0
							if a := g.Next[e]; !g.Hits(a, batch.Targets[r]) {
								next = hx[a]
							}
							vis[e] += probs[e] * beta * (hx[s] - next - 1) / float64(rollouts)
						}
					}
					k += l
				}
				for s := range n {
					sum := 0.0
					for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
						sum += vis[e]
					}
					for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
						vis[e] -= probs[e] * sum
					}
				}
				c, r = alongExact(tr, vis, exact)
				cv, rv = cv+c, rv+r
			}
			m := float64(it)
			b.ReportMetric(float64(drawn)/m, "tokens/batch")
			b.ReportMetric(cf/m, "cos-fork")
			b.ReportMetric(rf/m, "norm-fork")
			b.ReportMetric(ce/m, "cos-exact")
			b.ReportMetric(re/m, "norm-exact")
			b.ReportMetric(cv/m, "cos-visits")
			b.ReportMetric(rv/m, "norm-visits")
		})
	}
	// Walks with hindsight targets (Config.Hindsight): n walks hold n W
	// rollouts, on fewer sampled tokens (tokens/batch); the fork baseline's
	// estimate over them, at the paper's horizon and at the transformer's
	// 20 hitting times (with independent rollouts too, for comparison).
	for _, c := range []struct{ walks, rollouts, horizon int }{
		{8, 0, 2}, {32, 0, 2}, {77, 0, 2}, {0, 256, 20}, {8, 0, 20}, {32, 0, 20}, {77, 0, 20},
	} {
		name := fmt.Sprintf("walks=%d/horizon=%d", c.walks, c.horizon)
		if c.walks == 0 {
			name = fmt.Sprintf("rollouts=%d/horizon=%d", c.rollouts, c.horizon)
		}
		b.Run(name, func(b *testing.B) {
			var cf, rf float64
			it, drawn := 0, 0
			var buf eval.Buffers
			for b.Loop() {
				horizon := int(float64(c.horizon) * res.HittingTime)
				batch, err := buf.Walks(context.Background(), sp, max(c.walks, 1), horizon, uint64(100+it))
				if c.walks == 0 {
					batch, err = sp.Rollouts(context.Background(), c.rollouts, horizon, uint64(100+it))
				}
				if err != nil {
					b.Fatal(err)
				}
				it++
				drawn += batch.Drawn()
				states, _ := batch.States(g)
				lens := make([]int, len(batch.Targets))
				for i := range lens {
					lens[i] = batch.Len(i)
				}
				fork := tokenAdvantages(lens, batch.Hit, states, n, batch.Targets, g.W(), beta, "fork", forkStates(g), false, nil)
				c, r := alongExact(tr, reinforceEstimate(g, probs, fork, batch.Entries, states, len(lens)), exact)
				cf, rf = cf+c, rf+r
			}
			m := float64(it)
			b.ReportMetric(float64(drawn)/m, "tokens/batch")
			b.ReportMetric(cf/m, "cos-fork")
			b.ReportMetric(rf/m, "norm-fork")
		})
	}
}
