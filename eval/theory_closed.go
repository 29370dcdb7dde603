package eval

import (
	"errors"
	"fmt"
	"math"
)

// ABCD holds the per-depth transition probabilities of Section 4.1, depth j
// at index j-1: A[j-1] = a_j (R_j^+ -> L_{j+1}^+), B[j-1] = b_j (R_j^- -> L_j^-),
// C[j-1] = c_j (L_j^+ -> R_j^+), D[j-1] = d_j (L_j^- -> R_{j-1}^-).
type ABCD struct{ A, B, C, D []float64 }

// Validate reports whether p describes a branch the closed forms of Appendix B
// apply to: K = len(p.A) >= 1 depths in every slice and every probability in
// (0, 1] (they divide by a_j, b_j, c_j, d_j).
func (p ABCD) Validate() error {
	k := len(p.A)
	if k == 0 {
		return errors.New("eval: abcd: no depths")
	}
	for _, s := range [...]struct {
		name string
		n    int
	}{{"b", len(p.B)}, {"c", len(p.C)}, {"d", len(p.D)}} {
		if s.n != k {
			return fmt.Errorf("eval: abcd: len(%s) = %d, want len(a) = %d", s.name, s.n, k)
		}
	}
	for i := range k {
		for _, v := range [...]struct {
			name string
			x    float64
		}{{"a", p.A[i]}, {"b", p.B[i]}, {"c", p.C[i]}, {"d", p.D[i]}} {
			if !(v.x > 0 && v.x <= 1) {
				return fmt.Errorf("eval: abcd: %s_%d = %v, want in (0, 1]", v.name, i+1, v.x)
			}
		}
	}
	return nil
}

// Closed holds the closed forms of Appendix B ("Off-target quantities",
// "On-target quantities", "Closed Forms for G_j^(p)") for arbitrary a, b, c, d.
// Per-depth slices have length K, depth j at index j-1.
type Closed struct {
	W, K int
	Hf   float64 // H_f used in GradA..GradD (an input of ClosedForms)

	// Off-target quantities.
	MuTilde  FourStates // tilde-mu(s): visits during one non-target attempt, products of r_j = a_j c_j/(b_j d_j)
	E        []float64  // E_j = tilde-g(R_j^+) - tilde-g(R_{j-1}^-) = sum_{m>=j} 2(a_m+b_m)/(b_m d_m) prod_{i=j}^{m-1} a_i c_{i+1}/(b_i d_i)
	Delta    []float64  // Delta_j = tilde-g(L_{j+1}^+) - tilde-g(L_j^-) = (2 + c_{j+1} E_{j+1})/b_j, E_{K+1} = 0
	DeltaAlt []float64  // Delta_j = (d_j E_j - 2)/a_j, the paper's second expression
	F        []float64  // F_j = tilde-g(R_j^-) = sum_{m<=j} (2 + (1-d_m)E_m + (1-b_m)Delta_m)
	GTilde   FourStates // tilde-g(s): time from s to the fork, non-target branch, from F_{j-1}, E_j

	// On-target quantities.
	P          []float64  // P_j = prod_{m=j+1}^K a_m c_m/(b_{m-1} d_m)
	S          []float64  // S_j = sum_{m=j}^K alpha_m P_m, alpha_m = (1-a_m) + a_m(1-c_m)/d_m
	Zq         float64    // Z_q = P_1 (1 - a_1 + a_1/d_1) + S_2
	SmallDelta []float64  // delta_j = P_j/Z_q = q(L_j^-) - q(L_{j+1}^+)
	Epsilon    []float64  // epsilon_j = delta_j a_j/d_j = q(R_{j-1}^-) - q(R_j^+)
	Psucc      float64    // p_succ = a_1 c_1/d_1 P_1/Z_q
	ScriptB    []float64  // script B_j = -sum_{m=j+1}^K 2(c_m+d_m)/(b_{m-1}d_m) prod_{i=j+1}^{m-1} r_i (on-target r_i)
	DeltaGa    []float64  // Delta g_j^a = g(L_j^-) - g(L_{j+1}^+) = P_j Delta g_K^a + B_j, Delta g_K^a from P_g, Q_g
	DeltaGc    []float64  // Delta g_j^c = g(R_{j-1}^-) - g(R_j^+) = (a_j Delta g_j^a - 2)/d_j
	DeltaGcAlt []float64  // Delta g_j^c = (b_{j-1} Delta g_{j-1}^a + 2)/c_j, j >= 2 (NaN at j = 1)
	Mu         FourStates // mu(s): visits during one target attempt, from the prefix products A_j..D_j

	// Derived, not printed in the paper: g and q from their Bellman equations
	// ("Verification of the Closed Forms") and the gaps above, starting at
	// g(R_0^-) = 0, q(R_0^-) = 1; d_x from Proposition 'd_x'.
	G        FourStates // g(s)
	Q        FourStates // q(s)
	DxTarget FourStates // d_x(s) = mu(s)/p_succ on the target branch
	DxOff    FourStates // d_x(s) = tilde-mu(s)/p_succ on a non-target branch

	// GradA..GradD are the rescaled G_j^(a)..G_j^(d) of "Closed Forms for
	// G_j^(p)" evaluated at Hf.
	GradA, GradB, GradC, GradD []float64
}

// ClosedForms evaluates the closed forms of Appendix B (subsubsections
// "Off-target quantities", "On-target quantities", "Closed Forms for G_j^(p)")
// for W branches with per-depth probabilities p, using Hf for H_f in the G_j^(p)
// (pass HfFromClosedForms(W, p) for the policy's own H_f). Each formula is
// transcribed as printed; TestClosedFormsMatchChain checks them against an
// exact Markov-chain computation, and none of these three subsubsections
// disagrees with it. If p.Validate() fails or W < 1, it returns
// the zero Closed (K = 0).
func ClosedForms(W int, p ABCD, Hf float64) Closed {
	if W < 1 || p.Validate() != nil {
		return Closed{}
	}
	c := closedGaps(W, p)
	closedGrads(&c, p, Hf)
	return c
}

// HfFromClosedForms returns H_f = (W + g(L_1^+) + (W-1) tilde-g(L_1^+))/p_succ
// (Appendix B, "Summary of Important Quantities"). The paper gives no closed
// form for g(L_1^+) ("we will not write down the full expression"); it follows
// from the Bellman equation g(L_1^+) = 1 + c_1 g(R_1^+) with
// g(R_1^+) = g(R_0^-) - Delta g_1^c = -Delta g_1^c. NaN if p.Validate() fails
// or W < 1.
func HfFromClosedForms(W int, p ABCD) float64 {
	if W < 1 || p.Validate() != nil {
		return math.NaN()
	}
	c := closedGaps(W, p)
	gL1 := 1 - p.C[0]*c.DeltaGc[0]
	return (float64(W) + gL1 + float64(W-1)*c.GTilde.LPlus[0]) / c.Psucc
}

// closedGaps evaluates Appendix B's "Off-target quantities" and "On-target
// quantities" (every field of Closed but the G_j^(p)), plus g, q by the
// Bellman equations of "Verification of the Closed Forms" and d_x by
// Proposition 'd_x'.
func closedGaps(W int, p ABCD) Closed {
	K := len(p.A)
	// 1-based views; index 0 and K+1 are 0 and only reached through terms
	// the paper declares empty (E_{K+1} = 0, S_{K+1} = 0).
	a, b, cc, d := closedOneBased(p.A), closedOneBased(p.B), closedOneBased(p.C), closedOneBased(p.D)
	c := Closed{W: W, K: K, Hf: math.NaN(),
		MuTilde: newFourStates(K), E: make([]float64, K), Delta: make([]float64, K),
		DeltaAlt: make([]float64, K), F: make([]float64, K), GTilde: newFourStates(K),
		P: make([]float64, K), S: make([]float64, K), SmallDelta: make([]float64, K),
		Epsilon: make([]float64, K), ScriptB: make([]float64, K), DeltaGa: make([]float64, K),
		DeltaGc: make([]float64, K), DeltaGcAlt: theoryNaNs(K), Mu: newFourStates(K),
		G: newFourStates(K), Q: newFourStates(K), DxTarget: newFourStates(K), DxOff: newFourStates(K),
	}

	// Off-target quantities.
	prefR := make([]float64, K+2) // prefR[j] = prod_{m=1}^{j-1} a_m c_m/(b_m d_m)
	prefR[1] = 1
	for m := 1; m <= K; m++ {
		prefR[m+1] = prefR[m] * a[m] * cc[m] / (b[m] * d[m])
	}
	E := make([]float64, K+2)
	for j := 1; j <= K; j++ {
		c.MuTilde.LPlus[j-1] = prefR[j]
		c.MuTilde.RPlus[j-1] = cc[j] / d[j] * prefR[j]
		c.MuTilde.LMinus[j-1] = c.MuTilde.RPlus[j-1]
		c.MuTilde.RMinus[j-1] = prefR[j+1]
		for m := j; m <= K; m++ {
			prod := 1.0
			for i := j; i <= m-1; i++ {
				prod *= a[i] * cc[i+1] / (b[i] * d[i])
			}
			E[j] += 2 * (a[m] + b[m]) / (b[m] * d[m]) * prod
		}
	}
	F := 0.0 // F_{j-1}, F_0 = 0
	for j := 1; j <= K; j++ {
		c.E[j-1] = E[j]
		c.Delta[j-1] = (2 + cc[j+1]*E[j+1]) / b[j]
		c.DeltaAlt[j-1] = (d[j]*E[j] - 2) / a[j]
		c.GTilde.RPlus[j-1] = F + E[j]
		c.GTilde.LPlus[j-1] = 1 + F + cc[j]*E[j]
		c.GTilde.LMinus[j-1] = 1 + F + (1-d[j])*E[j]
		F += 2 + (1-d[j])*E[j] + (1-b[j])*c.Delta[j-1]
		c.F[j-1] = F
		c.GTilde.RMinus[j-1] = F
	}

	// On-target quantities.
	rOn := func(j int) float64 { return a[j] * cc[j] / (b[j-1] * d[j]) } // 2 <= j <= K
	P := make([]float64, K+2)
	S := make([]float64, K+2)
	P[K] = 1
	for j := K - 1; j >= 1; j-- {
		P[j] = P[j+1] * rOn(j+1)
	}
	for j := K; j >= 1; j-- {
		alpha := (1 - a[j]) + a[j]/d[j]*(1-cc[j])
		S[j] = S[j+1] + alpha*P[j]
	}
	c.Zq = P[1]*(1-a[1]+a[1]/d[1]) + S[2]
	c.Psucc = a[1] * cc[1] / d[1] * P[1] / c.Zq
	var pg, qg float64
	B := make([]float64, K+2)
	for j := 1; j <= K; j++ {
		for m := j + 1; m <= K; m++ {
			prod := 1.0
			for i := j + 1; i <= m-1; i++ {
				prod *= rOn(i)
			}
			B[j] -= 2 * (cc[m] + d[m]) / (b[m-1] * d[m]) * prod
		}
	}
	for m := 2; m <= K; m++ {
		beta := (1 - a[m]) + a[m]*(1-cc[m])/d[m]
		gamma := 2 - 2*(1-cc[m])/d[m]
		pg += beta * P[m]
		qg += beta*B[m] + gamma
	}
	lead := a[1]/d[1] + 1 - a[1]
	dgK := -(lead*B[1] - 2/d[1] + qg + 1) / (lead*P[1] + pg)
	for j := 1; j <= K; j++ {
		c.P[j-1], c.S[j-1], c.ScriptB[j-1] = P[j], S[j], B[j]
		c.SmallDelta[j-1] = P[j] / c.Zq
		c.Epsilon[j-1] = c.SmallDelta[j-1] * a[j] / d[j]
		c.DeltaGa[j-1] = P[j]*dgK + B[j]
		c.DeltaGc[j-1] = (a[j]*c.DeltaGa[j-1] - 2) / d[j]
		if j >= 2 {
			c.DeltaGcAlt[j-1] = (b[j-1]*c.DeltaGa[j-2] + 2) / cc[j]
		}
	}

	// mu from the prefix products; mu(L_{K+1}^+) := p_succ so mu(R_K^-) = 0.
	pre := closedPrefix(a, b, cc, d)
	for j := 1; j <= K; j++ {
		c.Mu.LPlus[j-1] = pre.m(j) * (S[j] + a[j]*cc[j]/d[j]*P[j]) / c.Zq
		c.Mu.RPlus[j-1] = pre.n(j) * (S[j+1] + P[j]) / c.Zq
		c.Mu.LMinus[j-1] = c.Mu.RPlus[j-1] - c.Psucc
	}
	for j := 1; j < K; j++ {
		c.Mu.RMinus[j-1] = c.Mu.LPlus[j] - c.Psucc
	}
	c.Mu.RMinus[K-1] = 0

	// g and q by the Bellman equations, walking from the fork.
	gPrev, qPrev := 0.0, 1.0 // g(R_{j-1}^-), q(R_{j-1}^-)
	for j := 1; j <= K; j++ {
		i := j - 1
		gRp, qRp := gPrev-c.DeltaGc[i], qPrev-c.Epsilon[i]
		gLm := 1 + d[j]*gPrev + (1-d[j])*gRp
		qLm := d[j]*qPrev + (1-d[j])*qRp
		gNext, qNext := 0.0, 0.0 // g(L_{K+1}^+) = q(L_{K+1}^+) = 0
		if j < K {
			gNext, qNext = gLm-c.DeltaGa[i], qLm-c.SmallDelta[i]
		}
		c.G.RPlus[i], c.Q.RPlus[i] = gRp, qRp
		c.G.LPlus[i] = 1 + cc[j]*gRp + (1-cc[j])*gPrev
		c.Q.LPlus[i] = cc[j]*qRp + (1-cc[j])*qPrev
		c.G.LMinus[i], c.Q.LMinus[i] = gLm, qLm
		gPrev = 1 + b[j]*gLm + (1-b[j])*gNext
		qPrev = b[j]*qLm + (1-b[j])*qNext
		c.G.RMinus[i], c.Q.RMinus[i] = gPrev, qPrev
	}
	for _, pair := range [...][2]*FourStates{{&c.DxTarget, &c.Mu}, {&c.DxOff, &c.MuTilde}} {
		dst, src := pair[0], pair[1]
		for i := range K {
			dst.LPlus[i] = src.LPlus[i] / c.Psucc
			dst.RPlus[i] = src.RPlus[i] / c.Psucc
			dst.LMinus[i] = src.LMinus[i] / c.Psucc
			dst.RMinus[i] = src.RMinus[i] / c.Psucc
		}
	}
	return c
}

// closedGrads fills GradA..GradD, "Closed Forms for G_j^(p)", as printed.
func closedGrads(c *Closed, p ABCD, Hf float64) {
	K := c.K
	a, b, cc, d := closedOneBased(p.A), closedOneBased(p.B), closedOneBased(p.C), closedOneBased(p.D)
	pre := closedPrefix(a, b, cc, d)
	P := append(append([]float64{0}, c.P...), 0)
	S := append(append([]float64{0}, c.S...), 0)
	dgK := c.DeltaGa[K-1] // P_K = 1, script B_K = 0
	c.Hf = Hf
	w1 := float64(c.W - 1)
	c.GradA, c.GradB, c.GradC, c.GradD = make([]float64, K), make([]float64, K), make([]float64, K), make([]float64, K)
	for j := 1; j <= K; j++ {
		i := j - 1
		Bj, zq, ps := c.ScriptB[i], c.Zq, c.Psucc
		n, m, mNext := pre.n(j), pre.m(j), pre.m(j+1) // A_{j-1}C_j/(B_{j-1}D_j), .../(..._{j-1}), A_jC_j/(B_jD_j)
		ga := P[j]*dgK + Bj + P[j]/zq*Hf
		c.GradA[i] = n*(S[j+1]+P[j])/zq*ga - w1*n*c.Delta[i]
		c.GradB[i] = (mNext*(S[j+1]+b[j]*P[j])/zq-ps)*(-P[j]*dgK-Bj-P[j]/zq*Hf) + w1*mNext*c.Delta[i]
		gc := (a[j]*(P[j]*dgK+Bj)-2)/d[j] + a[j]/d[j]*P[j]/zq*Hf
		c.GradC[i] = m*(S[j]+a[j]*cc[j]/d[j]*P[j])/zq*gc - w1*m*c.E[i]
		c.GradD[i] = (n*(S[j+1]+P[j])/zq-ps)*(-gc) + w1*n*c.E[i]
	}
}

// closedOneBased returns x with x[j] = s[j-1] for j = 1..K and x[0] = x[K+1] = 0.
func closedOneBased(s []float64) []float64 {
	x := make([]float64, len(s)+2)
	copy(x[1:], s)
	return x
}

// closedPrefixes holds the prefix products A_j, B_j, C_j, D_j of Appendix B,
// j = 0..K, with A_0 = B_0 = C_0 = D_0 = 1.
type closedPrefixes struct{ a, b, c, d []float64 }

// closedPrefix returns the prefix products of the 1-based a, b, c, d.
func closedPrefix(a, b, c, d []float64) closedPrefixes {
	k := len(a) - 2
	p := closedPrefixes{make([]float64, k+1), make([]float64, k+1), make([]float64, k+1), make([]float64, k+1)}
	p.a[0], p.b[0], p.c[0], p.d[0] = 1, 1, 1, 1
	for j := 1; j <= k; j++ {
		p.a[j], p.b[j], p.c[j], p.d[j] = p.a[j-1]*a[j], p.b[j-1]*b[j], p.c[j-1]*c[j], p.d[j-1]*d[j]
	}
	return p
}

// m is M_j = A_{j-1}C_{j-1}/(B_{j-1}D_{j-1}), for j = 1..K+1.
func (p closedPrefixes) m(j int) float64 {
	return p.a[j-1] * p.c[j-1] / (p.b[j-1] * p.d[j-1])
}

// n is N_j = A_{j-1}C_j/(B_{j-1}D_j), for j = 1..K.
func (p closedPrefixes) n(j int) float64 {
	return p.a[j-1] * p.c[j] / (p.b[j-1] * p.d[j])
}
