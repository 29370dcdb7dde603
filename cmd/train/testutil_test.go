package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
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

// withoutWall reads a run folder's CSV without its wall_seconds column
// (the only value a resumed run may not reproduce), for byte comparisons.
func withoutWall(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	col := slices.Index(strings.Split(lines[0], ","), "wall_seconds")
	if col < 0 {
		return string(data)
	}
	for i, l := range lines {
		if f := strings.Split(l, ","); len(f) > col {
			lines[i] = strings.Join(slices.Delete(f, col, col+1), ",")
		}
	}
	return strings.Join(lines, "\n")
}
