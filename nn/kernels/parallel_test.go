package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelForCovers checks that ParallelFor and ParallelEach visit
// every item exactly once, for counts around the number of cores.
func TestParallelForCovers(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1001} {
		for _, grain := range []int{1, 3, 100} {
			seen := make([]atomic.Int32, n)
			ParallelFor(n, grain, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("ParallelFor(%d, %d): item %d visited %d times", n, grain, i, c)
				}
			}
		}
		seen := make([]atomic.Int32, n)
		ParallelEach(n, func(i int) { seen[i].Add(1) })
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("ParallelEach(%d): item %d visited %d times", n, i, c)
			}
		}
	}
}

// callerFirst is ParallelFor as it was until 2026-11-28: the caller works
// on the first chunk while goroutines take the others.
func callerFirst(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	chunk := (n + w - 1) / w
	var wg sync.WaitGroup
	for lo := chunk; lo < n; lo += chunk {
		wg.Go(func() { fn(lo, min(n, lo+chunk)) })
	}
	fn(0, min(n, chunk))
	wg.Wait()
}

// BenchmarkParallelForFork times a parallel region of one chunk of busy
// work per core (20, 100 and 400 us each) with the caller working on the
// first chunk (caller-first) and with every chunk on a goroutine of its
// own (ParallelFor), and reports the region's time beyond one chunk's
// work (overhead-us): 0 when the chunks run side by side from the call,
// a chunk's length when they run one after the other. The second core's
// wait for a goroutine left in runnext is the runtime's (see ParallelFor).
func BenchmarkParallelForFork(b *testing.B) {
	spin := func(d time.Duration) {
		for t := time.Now(); time.Since(t) < d; {
		}
	}
	for _, v := range []struct {
		name string
		run  func(n int, fn func(lo, hi int))
	}{{"caller-first", callerFirst}, {"ParallelFor", func(n int, fn func(lo, hi int)) { ParallelFor(n, 1, fn) }}} {
		for _, d := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, 400 * time.Microsecond} {
			b.Run(fmt.Sprintf("%s/%dus", v.name, d.Microseconds()), func(b *testing.B) {
				n := runtime.GOMAXPROCS(0)
				for b.Loop() {
					v.run(n, func(lo, hi int) { spin(d) })
				}
				b.ReportMetric((float64(b.Elapsed().Nanoseconds())/float64(b.N)-float64(d.Nanoseconds()))/1e3, "overhead-us")
			})
		}
	}
}
