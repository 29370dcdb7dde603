package eval

import (
	"math"
	"math/big"
)

// This file holds the paper's closed-form hitting times: the pretrained
// policy (Appendix B), the converged RLVR policy (Section 4.3, Appendix D) and
// the converged SFT policy (Appendix D). Depth j = 1..K is stored at index j-1.

// H0 returns the hitting time of the pretrained (uniform world-model) policy,
//
//	H_0 = H_f(0) = (2W-1) * D * (1 + K(L+1)),   D = 1 + K + K/L,
//
// from Appendix B, "Values at Post-training Initialization". It is NaN unless
// W, K, L >= 1.
func H0(W, K, L int) float64 {
	if !theoryShapeOK(W, K, L) {
		return math.NaN()
	}
	w, k, l := float64(W), float64(K), float64(L)
	d := 1 + k + k/l
	return (2*w - 1) * d * (1 + k*(l+1))
}

// RLVRLimit returns the exact hitting time H_f of the converged RLVR policy
// (Theorem 'rlvr': a_j = b_j = c_j = d_j = 1) on a graph whose branch i has
// depth ks[i]; fork-incoming states stay uniform over all W branch entries,
// including the branch just left, and leaf-incoming states bounce (Section
// 4.1). It makes exact the Theta(WK) of Theorem 'separation' (Section 4.3 and
// the proof sketch of Section 5.3):
//
//   - from a fork-head state, 1 transition enters a branch at L_1^+;
//   - L_1^+ -> R_1^+ -> L_2^+ -> ... -> R_k^+ -> L_{k+1}^+ takes 2k more, so
//     the target branch costs 2k_i + 1;
//   - on a wrong branch the bounce L_{k+1}^+ -> R_k^- is 1 more and
//     R_k^- -> L_k^- -> ... -> L_1^- -> R_0^- is 2k more: a round trip from
//     fork head to fork head is 1 + 2k + 1 + 2k = 4k + 2;
//   - every fork departure picks the target branch with probability 1/W, so
//     there are W-1 wrong entries in expectation, spread evenly: each wrong
//     branch is entered once in expectation.
//
// Hence for target i, H_i = (2k_i + 1) + sum_{j != i} (4k_j + 2), and averaged
// over the uniform target H_f = 4S + 2W - (2S + W)/W with S = sum_i k_i. On a
// homogeneous graph this is (2K+1)(2W-1): 899 at W = K = 15, whose leading
// term is the paper's "4WK" (900, Figures 3, 6, 7); on heterogeneous graphs
// the leading term is 4S (Figure 8). It is NaN if ks is empty
// or some depth is < 1.
func RLVRLimit(ks []int) float64 {
	s, ok := theoryDepthSum(ks)
	if !ok {
		return math.NaN()
	}
	w, sf := float64(len(ks)), float64(s)
	return 4*sf + 2*w - (2*sf+w)/w
}

// RLVRLimitRat is RLVRLimit in exact arithmetic: 4S + 2W - (2S + W)/W. It is
// nil if ks is empty or some depth is < 1.
func RLVRLimitRat(ks []int) *big.Rat {
	s, ok := theoryDepthSum(ks)
	if !ok {
		return nil
	}
	w := int64(len(ks))
	h := new(big.Rat).SetInt64(4*int64(s) + 2*w)
	return h.Sub(h, big.NewRat(2*int64(s)+w, w))
}

// SFTExitRecursion returns Appendix D's recursion (also Section 5.3) for the
// converged SFT policy of Theorem 'sft' (a_j = c_j = 1, b_j = L/(L+1),
// d_j = 1/(L+1)) on a wrong branch of depth K: g[i-1] = g_i for i = 1..K+1 is
// the expected time from the leaf-incoming state L_{K+1}^+ to the first entry
// into R_{K+1-i}^-, and f[i-1] = f_i for i = 1..K the time to the first entry
// into L_{K+1-i}^- (Appendix D calls the leaf-incoming state R_{K+1}^+;
// Appendix B, L_{K+1}^+):
//
//	g_1 = 1,
//	f_i = (L+1)/L g_i + (2i-1)/L + 1,
//	g_i = (L+1) f_{i-1} + (2i-2) L + 1.
//
// First-step analysis confirms both lines. From R_m^- (m = K+1-i) the policy
// moves to L_m^- with probability L/(L+1); otherwise it U-turns to L_{m+1}^+
// and walks 2(i-1) transitions forward to the leaf-incoming state, which costs
// g_i again. So T = 1 + (2i-2 + g_i + T)/(L+1) and f_i = g_i + T. From L_m^-
// (m = K+2-i) it moves to R_{m-1}^- with probability 1/(L+1); otherwise it
// crosses back to R_m^+ and walks 2i-3 transitions to the leaf, costing
// f_{i-1} again: T = 1 + L(2i-3 + f_{i-1} + T)/(L+1) and g_i = f_{i-1} + T.
// g[K] = g_{K+1} is the time from the leaf of a wrong branch back to the fork.
// Both are nil unless K, L >= 1.
func SFTExitRecursion(K, L int) (f, g []float64) {
	if !theoryShapeOK(1, K, L) {
		return nil, nil
	}
	return sftRecursion(theoryConstL(K, L))
}

// SFTLimit returns the exact hitting time H_f of the converged SFT policy:
//
//	H_sft = (W-1)(2K + 1 + g_{K+1}) + 2K + 1,
//
// with g_{K+1} from SFTExitRecursion. The target branch costs 2K+1 (one
// transition into the branch, 2K forward, as a_j = c_j = 1); a wrong branch
// costs 2K+1 to its leaf and g_{K+1} back to the fork, and with uniform
// re-entry there are W-1 wrong entries in expectation (as in RLVRLimit). It
// is NaN unless W, K, L >= 1.
func SFTLimit(W, K, L int) float64 {
	if !theoryShapeOK(W, K, L) {
		return math.NaN()
	}
	_, g := SFTExitRecursion(K, L)
	return sftHitting(float64(W), float64(2*K+1), g[K])
}

// SFTLimitRat is SFTLimit computed from the recursion of Appendix D in exact
// arithmetic. It is nil unless W, K, L >= 1.
func SFTLimitRat(W, K, L int) *big.Rat {
	if !theoryShapeOK(W, K, L) {
		return nil
	}
	exit := sftExitRat(theoryConstL(K, L))
	trip := new(big.Rat).Add(exit, big.NewRat(int64(2*K+1), 1))
	h := new(big.Rat).Mul(trip, big.NewRat(int64(W-1), 1))
	return h.Add(h, big.NewRat(int64(2*K+1), 1))
}

// SFTLimitClosedForm is SFTLimit with g_{K+1} in the closed form of Appendix D,
//
//	g_{K+1} = r^K + alpha sum_{t=2}^{K+1} t r^{K+1-t} + beta sum_{t=2}^{K+1} r^{K+1-t},
//	r = (L+1)^2/L,  alpha = 2(L^2+L+1)/L,  beta = -(L^2+L+3)/L,
//
// from g_i = r g_{i-1} + alpha i + beta, with both sums as geometric series:
// with s = K+1-t, sum r^s = (r^K - 1)/(r - 1) and sum t r^s =
// (K+1)(r^K - 1)/(r - 1) - r(1 - K r^{K-1} + (K-1) r^K)/(r - 1)^2, s = 0..K-1.
// It is NaN unless W, K, L >= 1.
//
// Paper discrepancy (Section 5.3 and Theorem 'separation'): the paper states
// g_{K+1} = O(L^K) and an SFT hitting time of Theta(W L^K). In fact
// g_{K+1} = Theta(r^K): g_{K+1}/r^K = 1 + sum_{t=2}^{K+1} (alpha t + beta) r^{1-t}
// increases to 1 + alpha (r/(r-1)^2 + 1/(r-1)) + beta/(r-1) (4.258 at L = 5),
// and r/L = (1 + 1/L)^2 > 1, so the ratio to L^K grows without bound (at
// L = 1, W L^K = W while g_{K+1} >= 2 * 4^K). Appendix D's last step bounds
// beta (r^K-1)/(r-1) >= -2(r^K-1) and then replaces -2(r^K-1) by -2L^K, which
// goes the wrong way as r > L; the lower bound survives because the t = 2 term
// alone gives 2 alpha r^{K-1} >= 3 r^K, so g_{K+1} >= 2 r^K >= 2 L^K
// (TestSFTGrowth pins both).
func SFTLimitClosedForm(W, K, L int) float64 {
	if !theoryShapeOK(W, K, L) {
		return math.NaN()
	}
	r, alpha, beta := sftRecursionConstants(float64(L))
	k := float64(K)
	rk := math.Pow(r, k)
	geo := (rk - 1) / (r - 1)
	sr := r * (1 - k*math.Pow(r, k-1) + (k-1)*rk) / ((r - 1) * (r - 1))
	exit := rk + alpha*((k+1)*geo-sr) + beta*geo
	return sftHitting(float64(W), 2*k+1, exit)
}

// sftRecursionConstants returns Appendix D's r, alpha, beta of
// g_i = r g_{i-1} + alpha i + beta.
//
// Paper discrepancy (Appendix D, the substitution line): the paper writes
// f_{i-1} = (L+1)/L g_{i-1} + (2i-1)/L + 1, but shifting f_i's index gives
// (2i-3)/L. Its r, alpha, beta are nevertheless those of the correct
// (2i-3)/L; the printed (2i-1)/L would give beta = -(L^2-L+1)/L instead
// (TestSFTPaperSubstitution pins this).
func sftRecursionConstants(l float64) (r, alpha, beta float64) {
	return (l + 1) * (l + 1) / l, 2 * (l*l + l + 1) / l, -(l*l + l + 3) / l
}

// SFTLimitHetero returns the exact hitting time H_f of the converged SFT policy
// on a heterogeneous graph: branches[i][j] is the multiedge count L of diamond
// j+1 of branch i+1, so branch i has depth k_i = len(branches[i]), and the SFT
// limit keeps the pretrained b_j = L_j/(L_j+1), d_j = 1/(L_j+1). First-step
// analysis as in SFTExitRecursion, with the diamond that is being left:
//
//	f_i = (L_m+1)/L_m g_i + (2i-1)/L_m + 1,           m = k+1-i,
//	g_i = (L_m+1) f_{i-1} + (2i-2) L_m + 1,            m = k+2-i,
//
// so step i (f_i, then g_{i+1}) uses L_{k+1-i} only. A wrong branch costs
// 2k_i + 1 + g^{(i)}_{k_i+1}, and averaging over the uniform target,
// H_f = (1/W) sum_i [(2k_i + 1) + sum_{j != i} (2k_j + 1 + g^{(j)}_{k_j+1})].
// It is NaN if there is no branch, an empty branch or some L < 1.
func SFTLimitHetero(branches [][]int) float64 {
	if len(branches) == 0 {
		return math.NaN()
	}
	w := float64(len(branches))
	var sumTarget, sumTrip float64
	for _, ls := range branches {
		if len(ls) == 0 {
			return math.NaN()
		}
		for _, l := range ls {
			if l < 1 {
				return math.NaN()
			}
		}
		_, g := sftRecursion(ls)
		k := float64(len(ls))
		sumTarget += 2*k + 1
		sumTrip += 2*k + 1 + g[len(ls)]
	}
	// Each wrong-branch trip j is paid for the W-1 targets i != j.
	return (sumTarget + (w-1)*sumTrip) / w
}

// sftRecursion runs Appendix D's recursion (SFTExitRecursion, with the
// heterogeneous L of SFTLimitHetero) on one branch whose diamond j has
// ls[j-1] multiedges.
func sftRecursion(ls []int) (f, g []float64) {
	k := len(ls)
	f = make([]float64, k)
	g = make([]float64, k+1)
	g[0] = 1
	for i := 1; i <= k; i++ {
		fi := float64(i)
		l := float64(ls[k-i]) // L_{k+1-i}: leaving R^- of diamond k+1-i, then L^- of it
		f[i-1] = (l+1)/l*g[i-1] + (2*fi-1)/l + 1
		g[i] = (l+1)*f[i-1] + 2*fi*l + 1 // (2(i+1)-2) L + 1
	}
	return f, g
}

// sftExitRat is g_{k+1} of Appendix D's recursion (sftRecursion) in exact
// arithmetic.
func sftExitRat(ls []int) *big.Rat {
	k := len(ls)
	g := big.NewRat(1, 1)
	for i := 1; i <= k; i++ {
		l := int64(ls[k-i])
		f := new(big.Rat).Mul(g, big.NewRat(l+1, l))
		f.Add(f, big.NewRat(2*int64(i)-1+l, l)) // (2i-1)/L + 1
		g = f.Mul(f, big.NewRat(l+1, 1))
		g.Add(g, big.NewRat(2*int64(i)*l+1, 1))
	}
	return g
}

// sftHitting is H_sft = (W-1)(target + exit) + target (SFTLimit), with
// target = 2K+1 and exit = g_{K+1}.
func sftHitting(w, target, exit float64) float64 {
	return (w-1)*(target+exit) + target
}

// theoryShapeOK reports whether W, K, L describe a graph (all >= 1).
func theoryShapeOK(W, K, L int) bool { return W >= 1 && K >= 1 && L >= 1 }

// theoryConstL is the homogeneous branch: K diamonds of L multiedges.
func theoryConstL(K, L int) []int {
	ls := make([]int, K)
	for j := range ls {
		ls[j] = L
	}
	return ls
}

// theoryDepthSum returns S = sum_i k_i, and false if ks is empty or some k < 1.
func theoryDepthSum(ks []int) (int, bool) {
	if len(ks) == 0 {
		return 0, false
	}
	s := 0
	for _, k := range ks {
		if k < 1 {
			return 0, false
		}
		s += k
	}
	return s, true
}
