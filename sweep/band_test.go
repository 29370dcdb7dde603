package sweep

import (
	"math"
	"testing"
)

// TestBandStaysAboveFloor: three seeds of a Monte Carlo hitting time at
// 8, 9 and 40 (mean 19, 95% half-width 4.303 x 18.19 / sqrt 3 = 45.19) would
// put the band's lower end at -26.2, below any hitting time and off a log
// axis; it is clipped at the graph's shortest path, 7; the mean and the
// upper end stay.
func TestBandStaysAboveFloor(t *testing.T) {
	xs := [][]float64{{0, 10}, {0, 10}, {0, 10}}
	ys := [][]float64{{275, 8}, {275, 9}, {275, 40}}
	b := Band(xs, ys, 7)
	if b.Lo[1] != 7 || b.Mean[1] != 19 || math.Abs(b.Hi[1]-(19+45.19)) > 0.01 {
		t.Errorf("at step 10: lo %v, mean %v, hi %v; want 7, 19, about 64.19", b.Lo[1], b.Mean[1], b.Hi[1])
	}
	if b.Lo[0] != 275 || b.Hi[0] != 275 {
		t.Errorf("at step 0 (all seeds 275): lo %v, hi %v; want 275", b.Lo[0], b.Hi[0])
	}
	for i, lo := range b.Lo {
		if lo < 7 {
			t.Errorf("x %v: lower end %v below the floor 7", b.X[i], lo)
		}
	}
}
