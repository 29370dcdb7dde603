//go:build unix

package trainers

import "syscall"

// cpuSeconds returns the user and system CPU time of the process so far,
// so a benchmark can report CPU time per step, which other processes on a
// shared machine disturb less than wall time (nn's benchmarks have the
// same).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
