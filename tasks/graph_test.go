package tasks

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustNew(t testing.TB, c Config) *Graph {
	t.Helper()
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		name                string
		c                   Config
		states, transitions int
	}{
		// Paper size: 1 + W*(2K(L+1)+2) states; W*(2K(L+1)^2+1) + (W+1)W transitions.
		{"paper", Config{W: 15, K: 15, L: 5}, 2731, 16455},
		{"tiny", Config{W: 1, K: 1, L: 1}, 1 + 4 + 2, 1*(2*4+1) + 2},
		{"hetero", Config{Branches: [][]int{{2, 3}, {1}}}, 1 + (4 + 2 + 10) + (4 + 2), (1 + 2*9 + 2*16) + (1 + 2*4) + 3*2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustNew(t, tc.c)
			if got := g.NumStates(); got != tc.states {
				t.Errorf("states: got %d, want %d", got, tc.states)
			}
			if got := len(g.Next); got != tc.transitions {
				t.Errorf("transitions: got %d, want %d", got, tc.transitions)
			}
			s, tr := tc.c.Size()
			if int(s) != tc.states || int(tr) != tc.transitions {
				t.Errorf("Size: got %v, %v, want %d, %d", s, tr, tc.states, tc.transitions)
			}
		})
	}
}

// TestTransitionsAreAllEdgeContinuations checks the CSR against the
// definition: from u -> v, exactly the states v -> w.
func TestTransitionsAreAllEdgeContinuations(t *testing.T) {
	g := mustNew(t, Config{Branches: [][]int{{2, 3, 1}, {1}, {4, 4}}})
	byTail := map[int][]int{}
	for s, st := range g.States {
		byTail[st.Tail] = append(byTail[st.Tail], s)
	}
	for s, st := range g.States {
		want := byTail[st.Head]
		got := g.Row(s)
		if len(got) != len(want) {
			t.Fatalf("%s: got %d next states, want %d", g.Name(s), len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: next %d is %s, want %s", g.Name(s), i, g.Name(got[i]), g.Name(want[i]))
			}
		}
	}
}

func TestClassesAndNames(t *testing.T) {
	g := mustNew(t, Config{W: 2, K: 2, L: 2})
	b := g.Branches[0]
	for _, tc := range []struct {
		s     int
		name  string
		class Class
		depth int
	}{
		{0, "s0>f", Source, 0},
		{b.Entry(), "f>u1.1l", LPlus, 1},
		{b.ForkIn(), "u1.1l>f", ForkIn, 0},
		{b.Fwd(1, 1), "u1.1l>u1.1r#2", RPlus, 1},
		{b.Bwd(1, 0), "u1.1r>u1.1l#1", LMinus, 1},
		{b.Fwd(2, 0), "u1.1r>u1.2l", LPlus, 2},
		{b.Bwd(2, 0), "u1.2l>u1.1r", RMinus, 1},
		{b.Fwd(3, 0), "u1.2l>u1.2r#1", RPlus, 2},
		{b.LeafIn(), "u1.2r>t1", LeafIn, 3},
		{b.Bwd(4, 0), "t1>u1.2r", RMinus, 2},
	} {
		st := g.States[tc.s]
		if got := g.Name(tc.s); got != tc.name {
			t.Errorf("state %d: got name %q, want %q", tc.s, got, tc.name)
		}
		if st.Class != tc.class || st.Depth != tc.depth {
			t.Errorf("%s: got %v depth %d, want %v depth %d", tc.name, st.Class, st.Depth, tc.class, tc.depth)
		}
	}
	// The leaf bounces; fork-head states go to the W entries.
	if r := g.Row(b.LeafIn()); len(r) != 1 || r[0] != b.Bwd(4, 0) {
		t.Errorf("leaf-in row: got %v, want [%d]", r, b.Bwd(4, 0))
	}
	for _, s := range []int{0, b.ForkIn()} {
		if r := g.Row(s); len(r) != 2 || r[0] != g.Branches[0].Entry() || r[1] != g.Branches[1].Entry() {
			t.Errorf("%s row: got %v, want the two entries", g.Name(s), r)
		}
	}
}

func TestGoldenPath(t *testing.T) {
	g := mustNew(t, Config{Branches: [][]int{{2, 3}, {5}}})
	rng := rand.New(rand.NewPCG(1, 0))
	for target := 1; target <= g.W(); target++ {
		p, err := g.RandomGoldenPath(target, rng)
		if err != nil {
			t.Fatal(err)
		}
		if want := 2*g.Branches[target-1].Depth() + 2; len(p) != want {
			t.Fatalf("t%d: got %d states, want %d", target, len(p), want)
		}
		for i := 1; i < len(p); i++ {
			if g.States[p[i-1]].Head != g.States[p[i]].Tail || !g.States[p[i]].Forward {
				t.Fatalf("t%d: step %d %s -> %s is not a forward continuation", target, i, g.Name(p[i-1]), g.Name(p[i]))
			}
			if g.Hits(p[i-1], target) {
				t.Fatalf("t%d: hit before the end at %s", target, g.Name(p[i-1]))
			}
		}
		if !g.Hits(p[len(p)-1], target) {
			t.Errorf("t%d: path ends at %s, not the leaf", target, g.Name(p[len(p)-1]))
		}
		tr, _ := g.GoldenTransitions(target)
		var total float64
		for _, x := range tr {
			total += x.Weight
		}
		if want := float64(len(p) - 1); math.Abs(total-want) > 1e-12 {
			t.Errorf("t%d: golden transition weights sum to %v, want %v", target, total, want)
		}
	}
	if _, err := g.GoldenPath(1, []int{3, 1}); err == nil {
		t.Error("multiedge 3 of a 2-multiedge diamond: got no error")
	}
}

func TestDesired(t *testing.T) {
	g := mustNew(t, Config{W: 1, K: 2, L: 3})
	b := g.Branches[0]
	for _, tc := range []struct {
		s    int
		want []int
	}{
		{b.Fwd(1, 0), []int{b.Fwd(2, 0)}},                           // R_1^+ -> L_2^+
		{b.Bwd(2, 0), []int{b.Bwd(1, 0), b.Bwd(1, 1), b.Bwd(1, 2)}}, // R_1^- -> L_1^-
		{b.Entry(), []int{b.Fwd(1, 0), b.Fwd(1, 1), b.Fwd(1, 2)}},   // L_1^+ -> R_1^+
		{b.Bwd(1, 2), []int{b.ForkIn()}},                            // L_1^- -> fork
		{b.Fwd(3, 1), []int{b.LeafIn()}},                            // R_2^+ -> leaf
	} {
		got := g.Desired(tc.s)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %v, want %v", g.Name(tc.s), got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", g.Name(tc.s), got, tc.want)
			}
		}
	}
}

func TestParseBranches(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string // formatted, or error substring prefixed by "!"
	}{
		{"2,2,3;5,1;4,4,4,4", "2,2,3;5,1;4,4,4,4"},
		{" 1 , 2 ; 3 ", "1,2;3"},
		{"", "!empty spec"},
		{"2,,3", "!diamond 2 of branch 1"},
		{"2;", "!branch 2 is empty"},
		{"1;0", "!diamond 1 of branch 2 is \"0\""},
		{"a", "!want an integer"},
		{"-1", "!want an integer"},
	} {
		b, err := ParseBranches(tc.spec)
		if strings.HasPrefix(tc.want, "!") {
			if err == nil || !strings.Contains(err.Error(), tc.want[1:]) {
				t.Errorf("%q: got error %v, want one containing %q", tc.spec, err, tc.want[1:])
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: got error %v", tc.spec, err)
		} else if got := FormatBranches(b); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{W: 0, K: 1, L: 1}, "W=0"},
		{Config{W: 1, K: -2, L: 1}, "K=-2"},
		{Config{W: 1, K: 1, L: 0}, "L=0"},
		{Config{W: 1000, K: 1000, L: 1000}, "graph too large"},
		{Config{W: 2, K: 2, L: 2, MaxBytes: 100}, "max_bytes"},
		{Config{Branches: [][]int{{1}, {}}}, "branch 2 has 0 diamonds"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.c, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error is not one line: %q", tc.c, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
}
