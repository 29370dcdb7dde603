//go:build !linux

package main

// machineMemory is unknown off Linux: the default budget applies.
func machineMemory() int64 { return 0 }
