package experiment_test

import (
	"context"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// BenchmarkHeadline runs the paper's headline job, what go run ./cmd/train
// runs (exact RLVR at W=K=15, L=5 with sign descent, until within 0.1% of
// the limit), into a temporary folder, and reports the run's own wall
// time (the "steps in" time it prints: setting up, training, the
// checkpoints and the final measurement, before the plots) per run.
func BenchmarkHeadline(b *testing.B) {
	wall, steps := 0.0, 0
	for b.Loop() {
		cfg := experiment.DefaultConfig()
		cfg.Out = b.TempDir()
		s, err := experiment.Run(context.Background(), cfg, experiment.Options{})
		if err != nil {
			b.Fatal(err)
		}
		wall, steps = wall+s.WallSeconds, steps+s.Steps
	}
	b.ReportMetric(wall/float64(b.N), "steps-in-s")
	b.ReportMetric(float64(steps)/float64(b.N), "steps")
}
