//go:build unix

package nn

import "syscall"

// cpuSeconds returns the user and system CPU time of the process so far,
// so a benchmark can report CPU time per token, which other processes on
// a shared machine disturb less than wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
