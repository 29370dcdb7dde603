package sweep

import (
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// TestStudentT975 against published quantiles t_{0.975, df}.
func TestStudentT975(t *testing.T) {
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.706204736}, {2, 4.302652730}, {3, 3.182446305}, {4, 2.776445105}, {9, 2.262157163},
		{29, 2.045229642}, {100, 1.983971519}, {100000, 1.9599877}} { // the last: z + (z^3 + z)/(4 df)
		if got := StudentT975(c.df); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("df %d: got %.9f, want %.9f", c.df, got, c.want)
		}
	}
}

// TestMean95: a hand-computed interval; NaN values are left out; one value
// has no interval.
func TestMean95(t *testing.T) {
	e := Mean95([]float64{1, 2, 3, 4, 5, math.NaN()})
	// mean 3, sd sqrt(2.5), t_{0.975,4} = 2.776445105
	if want := 2.776445105 * math.Sqrt(2.5) / math.Sqrt(5); e.N != 5 || e.Mean != 3 || math.Abs(e.CI95-want) > 1e-8 {
		t.Errorf("got %+v, want N 5, mean 3, ci95 %.9f", e, want)
	}
	if e := Mean95([]float64{7}); e.N != 1 || e.Mean != 7 || !math.IsNaN(e.CI95) {
		t.Errorf("one value: got %+v", e)
	}
	if e := Mean95(nil); e.N != 0 || !math.IsNaN(e.Mean) {
		t.Errorf("no value: got %+v", e)
	}
}

// TestGroupStopsAndBest: a group counts its runs' stop reasons, most
// frequent first, and the largest excess of a final hitting time over its
// run's best row; a run that does not count is left out of both.
func TestGroupStopsAndBest(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	run := func(seed, stop string, final, best float64, problem string) *RunData {
		return &RunData{Fields: map[string]string{"trainer": "grpo", "seed": seed}, Problem: problem,
			Summary: &experiment.Summary{StopReason: trainers.Stop(stop), FinalHittingTime: f(final), BestHittingTime: f(best), SampledTokens: 100}}
	}
	c := &Collection{Runs: []*RunData{run("1", "until", 101, 101, ""), run("2", "plateau", 103, 102, ""), run("3", "until", 100, 100, ""), run("4", "steps", 200, 100, "stalled")}}
	groups, _ := c.Groups()
	if len(groups) != 1 {
		t.Fatalf("%d groups, want 1", len(groups))
	}
	g := groups[0]
	if got := g.StopsString(); got != "until 2, plateau 1" {
		t.Errorf("stops %q, want %q", got, "until 2, plateau 1")
	}
	if want := 103.0/102 - 1; math.Abs(g.AboveBest-want) > 1e-15 {
		t.Errorf("final above best %v, want %v", g.AboveBest, want)
	}
	if g.Tokens.N != 3 || g.Tokens.Mean != 100 {
		t.Errorf("tokens %+v, want 3 runs of 100", g.Tokens)
	}
}

// TestAboveBestResolvesMonteCarlo: for Monte Carlo values the excess of the
// final over the best counts beyond both 95% intervals only; exact values
// count it all.
func TestAboveBestResolvesMonteCarlo(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		final, fci, best, bci, want float64
	}{
		{103, 0, 100, 0, 0.03}, // exact
		{102, 4, 100, 8, 0},    // within the intervals: unresolved
		{120, 4, 100, 8, 0.08}, // 120-4 = 116 against 100+8 = 108
		{95, 2, 100, 8, 0},     // below the best
	} {
		s := &experiment.Summary{FinalHittingTime: f(c.final), BestHittingTime: f(c.best)}
		if c.fci > 0 {
			s.FinalCI95, s.BestCI95 = f(c.fci), f(c.bci)
		}
		if got := aboveBest(s); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("final %g ± %g, best %g ± %g: above best %g, want %g", c.final, c.fci, c.best, c.bci, got, c.want)
		}
	}
	// A Monte Carlo best with no interval is a lower bound: the excess
	// over it is not known.
	s := &experiment.Summary{FinalHittingTime: f(19.95), FinalCI95: f(0.33), BestHittingTime: f(14.53)}
	if got := aboveBest(s); !math.IsNaN(got) {
		t.Errorf("final 19.95 ± 0.33 over a best that is a lower bound, 14.53: above best %g, want NaN", got)
	}
}
