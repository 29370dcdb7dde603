package eval

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// BenchmarkAnalyze times one exact analysis (all targets: hitting times,
// h, d and the gradient weights) at three sizes spanning 100x in states, for
// a symmetric policy (every branch alike: solved once, copied) and an
// asymmetric one (random rows: every branch solved).
func BenchmarkAnalyze(b *testing.B) {
	for _, k := range []int{15, 150, 1500} {
		g := graph(b, tasks.Config{W: 15, K: k, L: 5})
		random, _ := randomRationalPolicy(g, rand.New(rand.NewPCG(1, 0)))
		for _, pol := range []struct {
			name  string
			probs []float64
		}{{"symmetric", PolicyPretrained(g)}, {"asymmetric", random}} {
			an := NewAnalyzer(g)
			b.Run(fmt.Sprintf("%s/W=15,K=%d,L=5,states=%d", pol.name, k, g.NumStates()), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, err := an.Analyze(pol.probs)
					if err != nil {
						b.Fatal(err)
					}
					r.CostWeights()
				}
				b.ReportMetric(float64(g.NumStates())*float64(b.N)/b.Elapsed().Seconds(), "states/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.NumStates()), "ns/state")
			})
		}
	}
}

// BenchmarkHittingTime times the hitting time alone (no visit counts), as
// train eval computes it, for the asymmetric policy.
func BenchmarkHittingTime(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	random, _ := randomRationalPolicy(g, rand.New(rand.NewPCG(1, 0)))
	an := NewAnalyzer(g)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := an.Analyze(random); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeL shows the cost in the multiplicity L: a diamond's rows
// form dense L x (L+1) blocks in general, so each diamond costs O(L^3)
// (O(L^2) per state); for fixed L the cost is linear in K and W.
func BenchmarkAnalyzeL(b *testing.B) {
	for _, l := range []int{5, 20, 80} {
		g := graph(b, tasks.Config{W: 3, K: 10, L: l})
		random, _ := randomRationalPolicy(g, rand.New(rand.NewPCG(1, 0)))
		an := NewAnalyzer(g)
		b.Run(fmt.Sprintf("L=%d,states=%d", l, g.NumStates()), func(b *testing.B) {
			for b.Loop() {
				r, err := an.Analyze(random)
				if err != nil {
					b.Fatal(err)
				}
				r.CostWeights()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.NumStates()), "ns/state")
		})
	}
}

// BenchmarkCheckPolicy times the validation of a policy at the paper's
// size, which exact RLVR runs on every step's policy.
func BenchmarkCheckPolicy(b *testing.B) {
	g := graph(b, tasks.Config{W: 15, K: 15, L: 5})
	probs := PolicyPretrained(g)
	for b.Loop() {
		if err := CheckPolicy(g, probs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(probs))*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
