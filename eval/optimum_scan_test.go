package eval

import (
	"math"
	"math/rand"
	"testing"
)

// phiScan evaluates phi(c_p) = H(e_p, c(c_p)) of optimum.go at n+1 points
// evenly spaced in c_p over [lo, 1]: the smallest value and the number of
// local minima (sign changes of phi' from - to +).
func phiScan(ks []int, p int, lo float64, n int) (low float64, minima int) {
	W := float64(len(ks))
	others := sortedDepths(ks, p)
	c := make([]float64, len(ks))
	low = math.Inf(1)
	prev := 0.0
	for i := 0; i <= n; i++ {
		cp := lo + (1-lo)*float64(i)/float64(n)
		kp := float64(ks[p])
		c[p] = cp
		fillEntry(ks, p, waterLevel(others, 1/cp-1, W/2+kp*cp), c)
		lin := make([]float64, len(ks))
		lin[p] = 1
		low = min(low, familyHittingTime(ks, lin, c))
		P, R := 0.0, 0.0
		for j, k := range ks {
			P += float64(k) * c[j]
			R += 1 / c[j]
		}
		d := 4*kp + 4*kp*(R-1)/W - (2+4*P/W)/(cp*cp)
		if i > 0 && prev < 0 && d >= 0 {
			minima++
		}
		prev = d
	}
	return low, minima
}

// TestBestEntryScan: phi need not be unimodal (depths 22 and 55 with the
// deep branch first: two local minima, bestEntry takes the lower), and on
// random depth vectors bestEntry is never above a dense scan of phi, for
// every first branch.
func TestBestEntryScan(t *testing.T) {
	ks := []int{22, 55}
	if _, n := phiScan(ks, 1, 0.3, 20000); n != 2 {
		t.Errorf("depths %v, deep branch first: got %d local minima, want 2", ks, n)
	}
	c, h := bestEntry(ks, 1)
	if low, _ := phiScan(ks, 1, 0.3, 20000); h > low || math.Abs(c[1]-0.4573) > 1e-3 {
		t.Errorf("depths %v: bestEntry c_p = %v, H = %.15g; scan %.15g at the minimum near c_p = 0.457", ks, c[1], h, low)
	}
	rng := rand.New(rand.NewSource(2))
	for range 300 {
		ks := make([]int, 1+rng.Intn(8))
		for i := range ks {
			ks[i] = 1 + rng.Intn(1+rng.Intn(80))
		}
		for p := range ks {
			_, h := bestEntry(ks, p)
			if low, _ := phiScan(ks, p, 0.002, 2000); h > low*(1+1e-14) {
				t.Errorf("depths %v, first branch %d: bestEntry %.15g above the scan's %.15g", ks, p+1, h, low)
			}
		}
	}
}
