package main

import (
	"bytes"
	"strings"
	"sync"
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
