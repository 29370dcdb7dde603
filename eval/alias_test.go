package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
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
				n := 1 << rec.bits()
				for _, sl := range tab.slots[rec.base() : int(rec.base())+n] {
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

// TestLanesDrawWhatOneWalkDraws: a batch walked four rollouts at a time
// (rolloutsLanes) is, rollout for rollout, the one each rollout's own
// stream gives walked alone (aliasTable.rollout): the same target, entries
// and hit, with and without a horizon, with given targets, for batch sizes
// that leave lanes idle, on small, paper-size and heterogeneous graphs.
func TestLanesDrawWhatOneWalkDraws(t *testing.T) {
	for _, c := range []struct {
		cfg     tasks.Config
		policy  func(*tasks.Graph) []float64
		horizon int
	}{
		{tasks.Config{W: 3, K: 2, L: 2}, PolicyPretrained, 0},
		{tasks.Config{W: 3, K: 2, L: 2}, PolicyPretrained, 9},
		{tasks.Config{W: 5, K: 5, L: 3}, PolicyRLVRLimit, 0},
		{tasks.DefaultConfig(), PolicyPretrained, 3000},
		{tasks.Config{Branches: [][]int{{2, 3}, {1, 7}, {4}}}, PolicyPretrained, 0},
	} {
		g := graph(t, c.cfg)
		sp := sampler(t, g, c.policy(g))
		var buf Buffers // reused across batches, as a trainer does
		for _, n := range []int{1, 3, 5, 37, 200} {
			for _, given := range []bool{false, true} {
				seed := uint64(n)
				var targets []int
				if given {
					for i := range n {
						targets = append(targets, 1+(i*7)%g.W())
					}
				}
				b, err := buf.Rollouts(context.Background(), sp, n, targets, c.horizon, seed)
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					rng := rand.New(rand.NewPCG(seed, uint64(i)))
					want := target(targets, i, g.W(), rng)
					entries, hit, err := sp.alias.rollout(context.Background(), nil, want, c.horizon, rng)
					if err != nil {
						t.Fatal(err)
					}
					got := b.Entries[b.Starts[i]:b.Starts[i+1]]
					if b.Targets[i] != want || b.Hit[i] != hit || !slices.Equal(got, entries) {
						t.Fatalf("%v horizon %d, n %d, targets given %v: rollout %d: target %d, hit %v, %d entries; alone: %d, %v, %d",
							c.cfg, c.horizon, n, given, i, b.Targets[i], b.Hit[i], len(got), want, hit, len(entries))
					}
				}
			}
		}
	}
}

// BenchmarkWalkLanes sets one rollout's walk beside four walked together,
// on one core, at the paper's size (pretrained policy, never hitting).
// One walk is bound by its chain of dependent reads (slot, then the chosen
// entry's next record, in L2 cache); four chains overlap their waits.
func BenchmarkWalkLanes(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	tab := newAliasTable(g, PolicyPretrained(g))
	const n = 1 << 16
	b.Run("one", func(b *testing.B) {
		buf := make([]int32, 0, n)
		w := wyrand(1)
		for b.Loop() {
			rec := tab.start
			tab.walk(buf[:0], &rec, 1<<30, n, &w)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	})
	b.Run("lanes", func(b *testing.B) {
		var ls [lanes]lane
		for k := range ls {
			ls[k] = lane{out: &agentWorker{entries: make([]int32, 0, n/lanes)}, r: wyrand(k), target: 1 << 30}
		}
		for b.Loop() {
			for k := range ls {
				ls[k].out.entries, ls[k].at = ls[k].out.entries[:0], tab.start
			}
			tab.walkLanes(&ls, n/lanes)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	})
}
