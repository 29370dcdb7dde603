package experiment_test

import (
	"context"
	"fmt"
	"os"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// A small experiment from Go: exact RLVR on W=3, K=2, L=2 from the
// pretrained bigram, until within 0.1% of the converged policy's exact
// hitting time, into a temporary run folder; then the metrics it wrote,
// read back by column name.
func Example() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := experiment.DefaultConfig()
	cfg.Graph = tasks.Config{W: 3, K: 2, L: 2}
	cfg.Out = dir
	s, err := experiment.Run(context.Background(), cfg, experiment.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s on %s: %.6g -> %.4f (limit %v) in %d steps, converged %v\n",
		s.Trainer, s.Graph, *s.InitialHittingTime, *s.FinalHittingTime, *s.LimitHittingTime, s.Steps, s.Converged)
	m, err := experiment.ReadMetrics(dir)
	if err != nil {
		panic(err)
	}
	h := m.Column("hitting_time")
	fmt.Printf("metrics.csv: %d rows, hitting time %.6g at step 0\n", len(m.Rows), h[0])
	// Output:
	// rlvr-exact on W=3,K=2,L=2: 140 -> 25.0248 (limit 25) in 432 steps, converged true
	// metrics.csv: 45 rows, hitting time 140 at step 0
}
