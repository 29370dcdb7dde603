package trainers

import (
	"context"
	"runtime/trace"
)

// region marks a phase of a step in an execution trace (train -trace FILE,
// or go test -trace FILE): go tool trace shows each as a region, and
// docs/traceidle splits the cores' use by them. It costs a check of a flag
// when no trace is being taken. End the region it returns on the goroutine
// that began it.
func region(name string) *trace.Region { return trace.StartRegion(context.Background(), name) }
