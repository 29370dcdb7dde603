package experiment

import (
	"math"
	"testing"
)

// TestHittingSeries: exact rows are named exact; a Monte Carlo row whose
// rollouts all hit gets its 95% interval, one where some missed (an SFT
// transformer at 24.9% success, say) is a lower bound with no interval.
func TestHittingSeries(t *testing.T) {
	nan := math.NaN()
	exact := &Metrics{Header: []string{"step", "hitting_time"}, Rows: [][]float64{{0, 50}, {10, 40}}}
	if s := HittingSeries(exact); s.Name != "exact hitting time" || s.Lo != nil || s.Lower != nil {
		t.Errorf("exact rows: got %q with intervals %v and lower bounds %v, want exact, none", s.Name, s.Lo, s.Lower)
	}
	mc := &Metrics{Header: []string{"step", "hitting_time", "hitting_time_ci95", "mc_success_rate"},
		Rows: [][]float64{{0, 300, 12, 1}, {10, 7397, nan, 0.249}}}
	s := HittingSeries(mc)
	if s.Name != "Monte Carlo hitting time, 95% interval" {
		t.Errorf("got name %q, want the Monte Carlo one", s.Name)
	}
	if s.Lower[0] || s.Lo[0] != 288 || s.Hi[0] != 312 {
		t.Errorf("row 0: got lower %v, interval [%v, %v], want false, [288, 312]", s.Lower[0], s.Lo[0], s.Hi[0])
	}
	if !s.Lower[1] || !math.IsNaN(s.Lo[1]) || !math.IsNaN(s.Hi[1]) {
		t.Errorf("row 1 (24.9%% hit): got lower %v, interval [%v, %v], want a lower bound without interval", s.Lower[1], s.Lo[1], s.Hi[1])
	}
}
