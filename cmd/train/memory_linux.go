package main

import "syscall"

// machineMemory is the machine's physical memory in bytes (0 if unknown).
func machineMemory() int64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
}
