package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// The machine's limits that docs/speed.md sets beside each hot loop:
// the peak rate of fused multiply-adds, the memory bandwidth, and the
// latency of a load that depends on the one before (a random walk over a
// table), each on one core and, where it scales, on all of them.

// BenchmarkPeakFMA measures the fused multiply-adds per second of
// independent four-wide FMAs on registers, on one core (-cpu 1) or all
// (one goroutine per core): the arithmetic limit.
func BenchmarkPeakFMA(b *testing.B) {
	if !haveAVX {
		b.Skip("no AVX2 and FMA")
	}
	const per = 1 << 20 // iterations per call, 48 multiply-adds each
	workers := runtime.GOMAXPROCS(0)
	calls := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() { defer wg.Done(); fmaPeak(per) }()
		}
		wg.Wait()
		calls += workers
	}
	b.ReportMetric(float64(calls)*per*48/b.Elapsed().Seconds()/1e9, "GFMA/s")
}

// BenchmarkMemoryBandwidth measures reading two 64 MiB vectors (Dot) and
// copying one into another (copy), on all cores, each core a share of
// the vectors: bytes moved per second (a copy reads and writes each byte).
func BenchmarkMemoryBandwidth(b *testing.B) {
	const n = 8 << 20 // float64s per vector: 64 MiB
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], y[i] = 1, 2
	}
	parts := func(f func(lo, hi int)) {
		w := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		for k := range w {
			wg.Add(1)
			go func() { defer wg.Done(); f(k*n/w, (k+1)*n/w) }()
		}
		wg.Wait()
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			parts(func(lo, hi int) { Dot(x[lo:hi], y[lo:hi]) })
		}
		b.ReportMetric(float64(b.N)*16*n/b.Elapsed().Seconds()/1e9, "GB/s")
	})
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			parts(func(lo, hi int) { copy(y[lo:hi], x[lo:hi]) })
		}
		b.ReportMetric(float64(b.N)*16*n/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}

// BenchmarkDependentLoad measures a chain of loads, each address read by
// the load before (a random cycle through a table), over tables of 32 KiB
// (first-level cache), 512 KiB (the bigram sampler's tables at the
// paper's size fit the second level), 8 MiB (the transformer's token
// records: third level) and 256 MiB (memory): ns per load on one core.
func BenchmarkDependentLoad(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"32KiB", 32 << 10}, {"512KiB", 512 << 10}, {"8MiB", 8 << 20}, {"256MiB", 256 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			// One int32 per 64-byte line, the lines in a random cycle.
			lines := size.bytes / 64
			next := make([]int32, lines*16)
			perm := rand.New(rand.NewPCG(1, 2)).Perm(lines)
			for i := range perm {
				next[perm[i]*16] = int32(perm[(i+1)%lines] * 16)
			}
			at := int32(perm[0] * 16)
			for b.Loop() {
				for range 1024 {
					at = next[at]
				}
			}
			if at < 0 {
				b.Fatal("unreachable")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/load")
		})
	}
}
