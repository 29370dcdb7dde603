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

// callerFirst is ParallelFor as it was until 2026-11-28 (f3f0d17): the
// caller works on the first chunk while goroutines take the others.
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

// TestParallelForConcurrent runs regions from several goroutines at once,
// some nested in another's parts, at several GOMAXPROCS: every item once,
// and no region waits forever.
func TestParallelForConcurrent(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			const callers, rounds, n = 4, 50, 37
			var wg sync.WaitGroup
			var bad atomic.Int32
			for c := range callers {
				wg.Go(func() {
					for r := range rounds {
						seen := make([]atomic.Int32, n)
						ParallelFor(n, 1+(c+r)%5, func(lo, hi int) {
							for i := lo; i < hi; i++ {
								seen[i].Add(1)
								if i%11 == 0 { // a nested region
									var inner atomic.Int32
									ParallelEach(7, func(int) { inner.Add(1) })
									if inner.Load() != 7 {
										bad.Add(1)
									}
								}
							}
						})
						for i := range seen {
							if seen[i].Load() != 1 {
								bad.Add(1)
							}
						}
					}
				})
			}
			wg.Wait()
			if b := bad.Load(); b != 0 {
				t.Fatalf("GOMAXPROCS %d: %d items not visited exactly once", procs, b)
			}
		}()
	}
}

// BenchmarkParallelForFork times a parallel region of one chunk of busy
// work per core (20, 100 and 400 us each), one region after another with
// gap us of serial work between them (0 or 200), in two forms: the caller
// working on the first chunk while goroutines take the others
// (caller-first), and ParallelFor, every chunk on a goroutine of its own.
// It reports the region's time beyond one chunk's work (overhead-us): 0
// when the chunks run side by side from the call, a chunk's length when
// they run one after the other (see ParallelFor).
func BenchmarkParallelForFork(b *testing.B) {
	spin := func(d time.Duration) {
		for t := time.Now(); time.Since(t) < d; {
		}
	}
	for _, v := range []struct {
		name string
		run  func(n int, fn func(lo, hi int))
	}{{"caller-first", callerFirst}, {"ParallelFor", func(n int, fn func(lo, hi int)) { ParallelFor(n, 1, fn) }}} {
		for _, gap := range []time.Duration{0, 200 * time.Microsecond} {
			for _, d := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, 400 * time.Microsecond} {
				b.Run(fmt.Sprintf("%s/gap%dus/%dus", v.name, gap.Microseconds(), d.Microseconds()), func(b *testing.B) {
					n := runtime.GOMAXPROCS(0)
					for b.Loop() {
						spin(gap)
						v.run(n, func(lo, hi int) { spin(d) })
					}
					b.ReportMetric((float64(b.Elapsed().Nanoseconds())/float64(b.N)-float64((d+gap).Nanoseconds()))/1e3, "overhead-us")
				})
			}
		}
	}
}
