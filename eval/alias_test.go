package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestAliasTablesHoldThePolicy: the alias tables of every row give each
// entry exactly its probability (each of the row's 2^k slots is drawn with
// probability 2^-k, then its entry with probability cut / 2^64 and its
// alias otherwise), entries of probability 0 never, on the pretrained,
// the SFT-limit and the RLVR-limit policies (rows with zeros and rows of
// one entry) and on random rows with zeros, homogeneous and heterogeneous
// graphs.
func TestAliasTablesHoldThePolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []tasks.Config{{W: 3, K: 2, L: 2}, {W: 15, K: 2, L: 5}, {Branches: [][]int{{2, 3}, {1, 7}, {4}}}} {
		g := graph(t, c)
		random := make([]float64, len(g.Next))
		for s := range g.States {
			lo, hi := g.Offsets[s], g.Offsets[s+1]
			sum := 0.0
			for e := lo; e < hi; e++ {
				if rng.IntN(3) > 0 || e == lo {
					random[e] = rng.ExpFloat64()
					sum += random[e]
				}
			}
			for e := lo; e < hi; e++ {
				random[e] /= sum
			}
		}
		for name, p := range map[string][]float64{"pretrained": PolicyPretrained(g), "sft-limit": PolicySFTLimit(g),
			"rlvr-limit": PolicyRLVRLimit(g), "random": random} {
			tab := newAliasTable(g, p)
			recs := make([]nextRecord, g.NumStates())
			recs[0] = tab.start
			for e, a := range g.Next {
				recs[a] = tab.next[e]
			}
			for s := range g.States {
				got := map[int32]float64{}
				rec := recs[s]
				n := 1 << rec.bits
				for _, sl := range tab.slots[rec.base : int(rec.base)+n] {
					q := math.Ldexp(float64(sl.cut), -64)
					got[sl.entry] += q / float64(n)
					got[sl.alias] += (1 - q) / float64(n)
				}
				for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
					if d := math.Abs(got[int32(e)] - p[e]); d > 1e-15 || (p[e] == 0 && got[int32(e)] != 0) {
						t.Errorf("%v %s: state %s -> %s: the tables give %.17g, want %.17g", c, name, g.Name(s), g.Name(g.Next[e]), got[int32(e)], p[e])
					}
					delete(got, int32(e))
				}
				for e, q := range got {
					if q != 0 {
						t.Errorf("%v %s: state %s: entry %d outside its row drawn with %v", c, name, g.Name(s), e, q)
					}
				}
			}
		}
	}
}

// TestAliasRolloutHorizonAndCancel: a rollout stops at its horizon
// without a hit, and a canceled context stops one that would not end.
func TestAliasRolloutHorizonAndCancel(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 4, L: 3})
	tab := newAliasTable(g, PolicySFTLimit(g)) // hitting time in the thousands
	rng := rand.New(rand.NewPCG(1, 2))
	buf, hit, err := tab.rollout(context.Background(), make([]int32, 5), 1, 7, rng)
	if err != nil || hit || len(buf) != 12 {
		t.Errorf("horizon 7 after 5 entries: got %d entries, hit %v, %v; want 12, false, nil", len(buf), hit, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := newAliasTable(g, PolicyFromABCD(g, func(int, int) (a, b, c, d float64) { return 0, 1, 1, 0 }))
	if _, _, err := never.rollout(ctx, nil, 1, 0, rng); err != context.Canceled {
		t.Errorf("canceled: got %v, want %v", err, context.Canceled)
	}
}
