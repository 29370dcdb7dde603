package eval

import (
	"fmt"
	"math"
	"math/big"
	"testing"
)

func TestH0(t *testing.T) {
	tests := []struct {
		W, K, L int
		want    float64
	}{
		{15, 15, 5, 50141}, // the paper's headline graph: 29 * 19 * 91
		{1, 1, 1, 9},       // 1 * 3 * 3; by hand: h(L_1^+) = 8 plus the first step
		{2, 1, 1, 27},      // 3 * 3 * 3
		{1, 2, 1, 25},      // 1 * 5 * 5
		{2, 3, 2, 165},     // 3 * 5.5 * 10
		{3, 2, 4, 192.5},   // 5 * 3.5 * 11
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("W%d_K%d_L%d", tt.W, tt.K, tt.L), func(t *testing.T) {
			if got := H0(tt.W, tt.K, tt.L); got != tt.want {
				t.Errorf("H0 = %v, want %v", got, tt.want)
			}
		})
	}
	if !math.IsNaN(H0(0, 1, 1)) {
		t.Errorf("H0(0, 1, 1) = %v, want NaN", H0(0, 1, 1))
	}
}

func TestH0MatchesChain(t *testing.T) {
	for _, W := range []int{1, 2, 3} {
		for _, K := range []int{1, 2, 4} {
			for _, L := range []int{1, 2, 5} {
				want := thHomogeneous(W, InitProbabilities(K, L)).hitting()
				if got := H0(W, K, L); !thClose(got, want, 1e-10, 1) {
					t.Errorf("H0(%d, %d, %d) = %v, chain %v", W, K, L, got, want)
				}
			}
		}
	}
}

// thOnes is the converged RLVR policy a = b = c = d = 1 on a branch of depth k.
func thOnes(k int) ABCD {
	p := ABCD{make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)}
	for i := range k {
		p.A[i], p.B[i], p.C[i], p.D[i] = 1, 1, 1, 1
	}
	return p
}

func TestRLVRLimit(t *testing.T) {
	ks15 := theoryConstL(15, 15)
	tests := []struct {
		name string
		ks   []int
		want float64
	}{
		{"W15_K15", ks15, 899}, // (2K+1)(2W-1); the paper's "4WK" is 900
		{"W1_K1", []int{1}, 3}, // enter, forward, hit
		{"W2_K1", []int{1, 1}, 9},
		// Target 1 (k=1): 3 + (4*2+2) = 13; target 2 (k=2): 5 + (4+2) = 11.
		{"hetero_1_2", []int{1, 2}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RLVRLimit(tt.ks); got != tt.want {
				t.Errorf("RLVRLimit = %v, want %v", got, tt.want)
			}
			if got, _ := RLVRLimitRat(tt.ks).Float64(); got != tt.want {
				t.Errorf("RLVRLimitRat = %v, want %v", got, tt.want)
			}
		})
	}
	for _, ks := range [][]int{{1, 2, 3}, {4, 1}, {2, 2, 2, 5}, {3}} {
		var ps []ABCD
		for _, k := range ks {
			ps = append(ps, thOnes(k))
		}
		if got, want := RLVRLimit(ks), newThFull(ps).hitting(); !thClose(got, want, 1e-10, 1) {
			t.Errorf("RLVRLimit(%v) = %v, chain %v", ks, got, want)
		}
	}
	if RLVRLimitRat(nil) != nil || !math.IsNaN(RLVRLimit([]int{2, 0})) {
		t.Errorf("invalid depths accepted")
	}
}

func TestSFTExitRecursionByHand(t *testing.T) {
	// K = 1, L = 1: from the leaf-incoming state x = T(L_2^+) = 1 + T(R_1^-),
	// T(R_1^-) = 1 + T(L_1^-)/2 + x/2, T(L_1^-) = 1 + T(R_1^+)/2, T(R_1^+) = 1 + x,
	// so x = 11 = g_2; f_1 = T to L_1^- = 2*1 + 1 + 1 = 4.
	f, g := SFTExitRecursion(1, 1)
	if len(f) != 1 || len(g) != 2 || f[0] != 4 || g[0] != 1 || g[1] != 11 {
		t.Fatalf("SFTExitRecursion(1, 1) = %v, %v, want [4], [1 11]", f, g)
	}
	// H_sft = (W-1)(3 + 11) + 3.
	for _, W := range []int{1, 2, 5} {
		want := float64(14*W - 11)
		if got := SFTLimit(W, 1, 1); got != want {
			t.Errorf("SFTLimit(%d, 1, 1) = %v, want %v", W, got, want)
		}
	}
}

// thSFT is the converged SFT policy a = c = 1, b_j = L_j/(L_j+1), d_j = 1/(L_j+1).
func thSFT(ls []int) ABCD {
	p := thOnes(len(ls))
	for i, l := range ls {
		p.B[i], p.D[i] = float64(l)/float64(l+1), 1/float64(l+1)
	}
	return p
}

func TestSFTLimitAgree(t *testing.T) {
	for K := 1; K <= 15; K++ {
		for L := 1; L <= 5; L++ {
			for _, W := range []int{1, 2, 15} {
				rec := SFTLimit(W, K, L)
				cf := SFTLimitClosedForm(W, K, L)
				rat, _ := SFTLimitRat(W, K, L).Float64()
				if !thClose(rec, rat, 1e-12, 0) || !thClose(cf, rat, 1e-12, 0) {
					t.Errorf("W=%d K=%d L=%d: recursion %v, closed form %v, big.Rat %v", W, K, L, rec, cf, rat)
				}
			}
		}
	}
}

func TestSFTLimitMatchesChain(t *testing.T) {
	for _, W := range []int{1, 2, 3} {
		for _, K := range []int{1, 2, 3, 5} {
			for _, L := range []int{1, 2, 5} {
				want := thHomogeneous(W, thSFT(theoryConstL(K, L))).hitting()
				if got := SFTLimit(W, K, L); !thClose(got, want, 1e-9, 1) {
					t.Errorf("SFTLimit(%d, %d, %d) = %v, chain %v", W, K, L, got, want)
				}
			}
		}
	}
}

func TestSFTLimitPaperGraph(t *testing.T) {
	h := SFTLimit(15, 15, 5)
	if math.IsInf(h, 0) || math.IsNaN(h) || h <= H0(15, 15, 5) {
		t.Fatalf("SFTLimit(15, 15, 5) = %v, want finite and above H0 = %v", h, H0(15, 15, 5))
	}
	_, g := SFTExitRecursion(15, 5)
	t.Logf("SFTLimit(15,15,5) = %.6g (exact %s), g_{K+1} = %.6g; H0 = %v; RLVRLimit = %v",
		h, SFTLimitRat(15, 15, 5).FloatString(4), g[15], H0(15, 15, 5), RLVRLimit(theoryConstL(15, 15)))
}

func TestSFTLimitHetero(t *testing.T) {
	for _, tt := range []struct{ W, K, L int }{{1, 1, 1}, {3, 4, 2}, {15, 15, 5}} {
		branches := make([][]int, tt.W)
		for i := range branches {
			branches[i] = theoryConstL(tt.K, tt.L)
		}
		got, want := SFTLimitHetero(branches), SFTLimit(tt.W, tt.K, tt.L)
		if !thClose(got, want, 1e-13, 0) {
			t.Errorf("SFTLimitHetero(%d x %d x L=%d) = %v, want SFTLimit %v", tt.W, tt.K, tt.L, got, want)
		}
	}
	// K = 1, L = 2 by hand, from the leaf: x = 1 + T(R_1^-), T(R_1^-) = 1 + 2/3 T(L_1^-) + x/3,
	// T(L_1^-) = 1 + 2/3 T(R_1^+), T(R_1^+) = 1 + x; so T(L_1^-) = 5/3 + 2x/3,
	// T(R_1^-) = 19/9 + 7x/9 and x = 28/9 + 7x/9, x = 14.
	if _, g := sftRecursion([]int{2}); g[1] != 14 {
		t.Errorf("g_2 at K=1, L=2 = %v, want 14", g[1])
	}
	for _, branches := range [][][]int{{{1, 3}, {2}}, {{2, 1, 4}, {3, 3}, {1}}, {{5}, {1, 1, 1}}} {
		var ps []ABCD
		for _, ls := range branches {
			ps = append(ps, thSFT(ls))
		}
		if got, want := SFTLimitHetero(branches), newThFull(ps).hitting(); !thClose(got, want, 1e-9, 1) {
			t.Errorf("SFTLimitHetero(%v) = %v, chain %v", branches, got, want)
		}
	}
}

// TestSFTPaperSubstitution pins the corrected substitution line of Appendix D:
// f_{i-1} carries (2i-3)/L, not the printed (2i-1)/L. With (2i-3)/L the
// recursion reduces to g_i = r g_{i-1} + alpha i + beta with the paper's own
// alpha, beta; with the printed (2i-1)/L it would need beta' = -(L^2-L+1)/L.
func TestSFTPaperSubstitution(t *testing.T) {
	for L := 1; L <= 5; L++ {
		l := float64(L)
		r, alpha, beta := sftRecursionConstants(l)
		_, g := SFTExitRecursion(8, L)
		for i := 2; i <= 9; i++ {
			fi := float64(i)
			if got := r*g[i-2] + alpha*fi + beta; !thClose(got, g[i-1], 1e-13, 0) {
				t.Errorf("L=%d i=%d: r g_{i-1} + alpha i + beta = %v, recursion g_i = %v", L, i, got, g[i-1])
			}
			printed := (l+1)*((l+1)/l*g[i-2]+(2*fi-1)/l+1) + (2*fi-2)*l + 1
			if thClose(printed, g[i-1], 1e-13, 0) {
				t.Errorf("L=%d i=%d: the printed (2i-1)/L substitution %v unexpectedly equals g_i", L, i, printed)
			}
			if want := r*g[i-2] + alpha*fi - (l*l-l+1)/l; !thClose(printed, want, 1e-13, 0) {
				t.Errorf("L=%d i=%d: printed line gives %v, want beta' form %v", L, i, printed, want)
			}
		}
	}
}

// TestSFTGrowth pins the order of g_{K+1}: Theta(r^K), r = (L+1)^2/L, with
// g_{K+1} >= 2 r^K, and not the O(L^K) of Section 5.3 / Theorem 'separation'
// (at L = 1 that would be O(1)).
func TestSFTGrowth(t *testing.T) {
	for L := 1; L <= 5; L++ {
		r, alpha, beta := sftRecursionConstants(float64(L))
		// g_{K+1}/r^K = 1 + sum_{t=2}^{K+1} (alpha t + beta) r^{1-t} increases to
		// 1 + alpha (r/(r-1)^2 + 1/(r-1)) + beta/(r-1).
		limit := 1 + alpha*(r/((r-1)*(r-1))+1/(r-1)) + beta/(r-1)
		prev := 0.0
		for K := 1; K <= 15; K++ {
			_, g := SFTExitRecursion(K, L)
			ratio := g[K] / math.Pow(r, float64(K))
			if ratio < 2 || ratio > limit*(1+1e-12) {
				t.Errorf("L=%d K=%d: g_{K+1}/r^K = %v, want in [2, %v]", L, K, ratio, limit)
			}
			if K > 1 && ratio < prev {
				t.Errorf("L=%d K=%d: g_{K+1}/r^K = %v decreased from %v", L, K, ratio, prev)
			}
			prev = ratio
		}
		if !thClose(prev, limit, 1e-6, 0) {
			t.Errorf("L=%d: g_16/r^15 = %v, want near its limit %v", L, prev, limit)
		}
	}
	// L = 1: g_{K+1} >= 4^K, so W L^K = W cannot be the order of H_sft.
	_, g := SFTExitRecursion(10, 1)
	if g[10] < math.Pow(4, 10) {
		t.Errorf("g_11 at L=1 = %v, want >= 4^10", g[10])
	}
}

func TestSFTLimitRatExact(t *testing.T) {
	// (W-1)(3 + 11) + 3 at K = L = 1, W = 2: exactly 17.
	if got := SFTLimitRat(2, 1, 1); got.Cmp(big.NewRat(17, 1)) != 0 {
		t.Errorf("SFTLimitRat(2, 1, 1) = %v, want 17", got)
	}
	if SFTLimitRat(0, 1, 1) != nil || !math.IsNaN(SFTLimitClosedForm(1, 0, 1)) {
		t.Errorf("invalid shapes accepted")
	}
}
