package tasks

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShortestPath: the fewest transitions to a leaf is the shortest of
// the golden paths' lengths, target by target.
func TestShortestPath(t *testing.T) {
	for _, c := range []Config{{W: 3, K: 3, L: 2}, {W: 1, K: 5, L: 1}, {Branches: [][]int{{2, 2, 3}, {5}, {4, 4, 4, 4}}}} {
		g, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Inf(1)
		for x := 1; x <= g.W(); x++ {
			p, err := g.RandomGoldenPath(x, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			want = min(want, float64(len(p)-1))
		}
		if got := c.ShortestPath(); got != want {
			t.Errorf("%s: got %v, want %v", c.Name(), got, want)
		}
	}
}
