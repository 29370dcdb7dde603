//go:build !unix

package main

import "testing"

// holdLock: the lock is a flock on unix only.
func holdLock(t *testing.T, path string) (release func()) {
	t.Skip("holding a run folder's lock needs flock (unix)")
	return nil
}
