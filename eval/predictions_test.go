package eval

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

func TestPredict(t *testing.T) {
	h15, _ := homogeneousTrained(15, 15)
	tests := []struct {
		name                string
		g                   *tasks.Graph
		optimum             float64
		first               int
		frozen, limit, best float64
		bestBranch          int
	}{
		{"W5K5L3", graph(t, tasks.Config{W: 5, K: 5, L: 3}), 97, 1, 99, 99, 99, 0},
		{"W15K15L5", graph(t, tasks.DefaultConfig()), h15, 1, 899, 899, 899, 0},
		// The issue: the old optimum (now rlvr_best_entry) said 119.
		{"hetero5", branchGraph(t, hetero5), 118.7112489, 1, frozenValue([]int{3, 5, 7, 9, 11}, 5.25), RLVRLimit([]int{3, 5, 7, 9, 11}), 119, 1},
		{"heteroT", branchGraph(t, heteroT), 31, 2, frozenValue([]int{3, 2, 4}, 3.25), 35, 31, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, pf := Predict(tt.g, true), Predict(tt.g, false)
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"rlvr_optimum", p.RLVROptimum, tt.optimum}, {"rlvr_optimum (frozen)", pf.RLVROptimum, tt.frozen},
				{"rlvr_optimum_source_trained", pf.RLVROptimumSourceTrained, tt.optimum}, {"rlvr_optimum_source_frozen", p.RLVROptimumSourceFrozen, tt.frozen},
				{"rlvr_limit", p.RLVRLimit, tt.limit}, {"rlvr_best_entry", p.RLVRBestEntry, tt.best},
			} {
				if relErr(f.got, f.want) > 1e-7 {
					t.Errorf("%s: got %.12g, want %.12g", f.name, f.got, f.want)
				}
			}
			if p.FirstBranch != tt.first || pf.FirstBranch != 0 || p.BestEntryBranch != tt.bestBranch || len(p.RLVROptimumEntry) != tt.g.W() || len(pf.RLVROptimumEntry) != tt.g.W() {
				t.Errorf("got first branch %d (frozen %d), best-entry branch %d, entries %v %v; want %d, 0, %d, W each",
					p.FirstBranch, pf.FirstBranch, p.BestEntryBranch, p.RLVROptimumEntry, pf.RLVROptimumEntry, tt.first, tt.bestBranch)
			}
			if !p.Certified || !pf.Certified || p.RLVROptimumCertificate == nil {
				t.Errorf("certificates: trained %v, frozen %v", p.Certified, pf.Certified)
			}
			le := func(a, b float64) bool { return a <= b*(1+1e-12) } // the analyzer rounds
			if !(le(p.RLVROptimum, p.RLVRBestEntry) && le(p.RLVROptimum, pf.RLVROptimum) && le(pf.RLVROptimum, p.RLVRLimit)) {
				t.Errorf("optima out of order: %+v", p)
			}
			raw, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"rlvr_limit", "rlvr_limit_leading_4WK", "sft_limit", "rlvr_optimum", "rlvr_optimum_source_frozen", "rlvr_optimum_source_trained", "rlvr_optimum_certificate", "train_source"} {
				if _, ok := m[key]; !ok {
					t.Errorf("JSON %s lacks %q", raw, key)
				}
			}
			if _, ok := m["H0"]; ok != (p.H0 > 0) || math.IsNaN(p.SFTLimit) {
				t.Errorf("JSON %s: H0 present %v, want %v", raw, ok, p.H0 > 0)
			}
		})
	}
}
