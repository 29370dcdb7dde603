//go:build !unix

package trainers

// cpuSeconds is not measured on this system.
func cpuSeconds() float64 { return 0 }
