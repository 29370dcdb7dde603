package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// safeBuffer is a bytes.Buffer safe for a subprocess's writer goroutine.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// withoutWall reads a run folder's CSV without its timed columns
// (experiment.TimedColumns: wall_seconds, step_seconds, the token rates;
// the only values a resumed run may not reproduce), for byte comparisons.
func withoutWall(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dropColumns(string(data), experiment.TimedColumns())
}

// dropColumns removes the named columns from CSV text.
func dropColumns(text string, names []string) string {
	lines := strings.Split(text, "\n")
	header := strings.Split(lines[0], ",")
	var drop []int // in decreasing order, so deleting keeps the others' places
	for i := len(header) - 1; i >= 0; i-- {
		if slices.Contains(names, header[i]) {
			drop = append(drop, i)
		}
	}
	for i, l := range lines {
		f := strings.Split(l, ",")
		if len(f) != len(header) {
			continue
		}
		for _, c := range drop {
			f = slices.Delete(f, c, c+1)
		}
		lines[i] = strings.Join(f, ",")
	}
	return strings.Join(lines, "\n")
}
