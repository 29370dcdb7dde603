package eval

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestVisitABCDIgnoresUnvisitedCopies: the forward choice at L_2^+ of
// branch 1 never takes multiedge 1, whose R_2^+ copy has a = 0. Weighted by
// visits, a_2 on branch 1 stays 1; the plain mean over copies reads 2/3.
func TestVisitABCDIgnoresUnvisitedCopies(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 3, L: 3})
	p := PolicyRLVRLimit(g)
	b := g.Branches[0]
	lplus := b.Fwd(2, 0) // L_2^+: the connector into diamond 2 (group 3)
	row := p[g.Offsets[lplus]:g.Offsets[lplus+1]]
	for n, a := range g.Row(lplus) {
		switch {
		case a == b.Fwd(3, 0):
			row[n] = 0
		case a > b.Fwd(3, 0) && a < b.Fwd(3, 0)+3:
			row[n] = 0.5
		}
	}
	setDesired(g, p, b.Fwd(3, 0), 0) // R_2^+ copy 1: a = 0, never visited
	if st := g.States[b.Fwd(3, 0)]; st.Class != tasks.RPlus || st.Depth != 2 || st.Multi != 1 {
		t.Fatalf("state %s is not R_2^+ copy 1", g.Name(b.Fwd(3, 0)))
	}
	r := analyze(t, g, p)
	if v := r.D(1, b.Fwd(3, 0)) + r.D(2, b.Fwd(3, 0)); v != 0 {
		t.Fatalf("R_2^+ copy 1 visited %v times, want 0", v)
	}
	rows, _, mean := r.VisitABCD()
	plain := ABCDTable(g, p)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"visit-weighted a_2, branch 1", rows[1].A, 1},
		{"visit-weighted c_2, branch 1", rows[1].C, 1},
		{"visit-weighted mean a", mean.A, 1},
		{"per-copy a_2, branch 1", plain[1].A, 2.0 / 3},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-12 {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestVisitABCDAgreesWhenCopiesAlike: when every copy of a group has the same
// desired mass, weighting changes nothing; a group never visited (the
// backward states of the only branch, which is always the target) is NaN.
func TestVisitABCDAgreesWhenCopiesAlike(t *testing.T) {
	for _, c := range []tasks.Config{{W: 3, K: 2, L: 3}, {Branches: [][]int{{2, 1}, {3}}}} {
		g := graph(t, c)
		p := PolicyPretrained(g)
		rows, _, mean := analyze(t, g, p).VisitABCD()
		for i, want := range ABCDTable(g, p) {
			for k := range 4 {
				if got := *rows[i].at(k); math.Abs(got-*want.at(k)) > 1e-12 || rows[i].Branch != want.Branch || rows[i].Depth != want.Depth {
					t.Errorf("%s branch %d depth %d field %d: got %v, want %v", c.Name(), want.Branch, want.Depth, k, got, *want.at(k))
				}
			}
		}
		if mean.Branch != 0 || mean.Depth != 0 || math.IsNaN(mean.A) {
			t.Errorf("%s: mean row %+v", c.Name(), mean)
		}
	}
	g := graph(t, tasks.Config{W: 1, K: 2, L: 2})
	rows, _, mean := analyze(t, g, PolicyRLVRLimit(g)).VisitABCD()
	for _, r := range append(rows, mean) {
		if r.A != 1 || r.C != 1 || !math.IsNaN(r.B) || !math.IsNaN(r.D) {
			t.Errorf("W=1: got %+v, want a = c = 1 and b, d NaN (never visited)", r)
		}
	}
}

// TestABCDRowJSON: a row without visits (NaN) is written with nulls, the
// others exactly.
func TestABCDRowJSON(t *testing.T) {
	b, err := json.Marshal([]ABCDRow{{Branch: 1, Depth: 2, A: 0.5, B: math.NaN(), C: 1, D: 0.25}})
	if want := `[{"branch":1,"depth":2,"a":0.5,"b":null,"c":1,"d":0.25}]`; err != nil || string(b) != want {
		t.Errorf("got %s (%v), want %s", b, err, want)
	}
}
