package tasks

import "testing"

// Entry finds every transition's CSR entry, and -1 for a pair that is not
// a transition (s0 -> f cannot follow itself).
func TestEntry(t *testing.T) {
	g, err := New(Config{W: 2, K: 2, L: 2})
	if err != nil {
		t.Fatal(err)
	}
	for s := range g.NumStates() {
		for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
			if got := g.Entry(s, g.Next[e]); got != e {
				t.Errorf("%s -> %s: got entry %d, want %d", g.Name(s), g.Name(g.Next[e]), got, e)
			}
		}
	}
	if got := g.Entry(0, 0); got != -1 {
		t.Errorf("s0>f -> s0>f: got entry %d, want -1", got)
	}
}
