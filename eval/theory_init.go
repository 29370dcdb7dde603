package eval

import "math"

// FourStates holds one per-depth quantity of Appendix B on the four state
// types of a branch; depth j = 1..K is at index j-1.
type FourStates struct {
	LPlus  []float64 // L_j^+: u_{j-1,r} -> u_{j,l} (L_1^+ is the branch entry f -> u_{1,l})
	RPlus  []float64 // R_j^+: u_{j,l} -> u_{j,r}, all L multiedges together
	LMinus []float64 // L_j^-: u_{j,r} -> u_{j,l}, all L multiedges together
	RMinus []float64 // R_j^-: u_{j+1,l} -> u_{j,r} (R_K^- is t -> u_{K,r})
}

// newFourStates allocates a FourStates for k depths.
func newFourStates(k int) FourStates {
	return FourStates{make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)}
}

// Init holds the values of Appendix B, "Values at Post-training
// Initialization" (a_j = d_j = 1/(L+1), b_j = c_j = L/(L+1)), transcribed as
// the paper writes them. Per-depth slices have length K, depth j at index j-1.
// For a fixed target leaf x, "target" quantities live on x's branch and "off"
// quantities on any other branch.
type Init struct {
	W, K, L int
	D       float64 // D = 1 + K + K/L
	Psucc   float64 // p_succ = 1/D: P(reach x before f | enter x's branch at L_1^+)
	H0      float64 // H_0 = H_f(0) = (2W-1) D (1 + K(L+1)): hitting time from a fork-head state

	DxTarget FourStates // d_x(s) on the target branch: expected visits to s before hitting x
	DxOff    FourStates // d_x(s) on a non-target branch: D for L^+, R^-, D L for R^+, L^-
	MuTilde  FourStates // tilde-mu(s): visits to s during one non-target branch attempt, from L_1^+ to f
	GTilde   FourStates // tilde-g(s): expected time from s to a state with head f, non-target branch
	Delta    []float64  // Delta_j(0) = tilde-g(L_{j+1}^+) - tilde-g(L_j^-)
	E        []float64  // E_j(0) = tilde-g(R_j^+) - tilde-g(R_{j-1}^-)

	Mu         FourStates // mu(s): visits to s during one target branch attempt, from L_1^+ to f or x
	G          FourStates // g(s): expected time from s to a state with head f or x, target branch
	DeltaGa    []float64  // Delta g_j^(a) = g(L_j^-) - g(L_{j+1}^+)
	DeltaGc    []float64  // Delta g_j^(c) = g(R_{j-1}^-) - g(R_j^+)
	Q          FourStates // q(s): probability of reaching f before x from s, target branch
	SmallDelta []float64  // delta_j(0) = q(L_j^-) - q(L_{j+1}^+)
	Epsilon    []float64  // epsilon_j(0) = q(R_{j-1}^-) - q(R_j^+)

	// GradA..GradD are the rescaled G_j^(a)(0)..G_j^(d)(0) of the proof of
	// Lemma 'Gjp_init': the sign of GradP is the direction in which sign
	// gradient flow moves the logit gap of p_j (Proposition 'Delta_g' without
	// its factor 1/(W p_succ)).
	GradA, GradB, GradC, GradD []float64
}

// InitValues returns the quantities of Appendix B, "Values at Post-training
// Initialization", and of the proof of Lemma 'Gjp_init', for W, K, L >= 1
// (otherwise the zero Init). Each line below transcribes one display of the
// paper; TestInitMatchesChain checks every one against an exact Markov-chain
// computation, and TestInitMatchesClosedForms against ClosedForms.
func InitValues(W, K, L int) Init {
	if !theoryShapeOK(W, K, L) {
		return Init{}
	}
	w, k, l := float64(W), float64(K), float64(L)
	d := 1 + k + k/l
	in := Init{
		W: W, K: K, L: L, D: d, Psucc: 1 / d, H0: H0(W, K, L),
		DxTarget: newFourStates(K), DxOff: newFourStates(K), MuTilde: newFourStates(K),
		GTilde: newFourStates(K), Delta: make([]float64, K), E: make([]float64, K),
		Mu: newFourStates(K), G: newFourStates(K), DeltaGa: make([]float64, K),
		DeltaGc: make([]float64, K), Q: newFourStates(K), SmallDelta: make([]float64, K),
		Epsilon: make([]float64, K), GradA: make([]float64, K), GradB: make([]float64, K),
		GradC: make([]float64, K), GradD: make([]float64, K),
	}
	for i := range K {
		j := float64(i + 1)

		// Target branch visit counts d_x.
		in.DxTarget.LPlus[i] = (k - j + 2) + (k-j+1)/l
		in.DxTarget.RMinus[i] = (k - j) + (k-j)/l
		in.DxTarget.RPlus[i] = ((k - j + 1) + (k-j+1)/l) * l
		in.DxTarget.LMinus[i] = ((k - j + 1) + (k-j)/l) * l

		// Non-target branch: d_x and tilde-mu.
		in.DxOff.LPlus[i], in.DxOff.RMinus[i] = d, d
		in.DxOff.RPlus[i], in.DxOff.LMinus[i] = d*l, d*l
		in.MuTilde.LPlus[i], in.MuTilde.RMinus[i] = 1, 1
		in.MuTilde.RPlus[i], in.MuTilde.LMinus[i] = l, l

		// tilde-g and its gaps.
		gtL := j + (l+1)*j*(2*k+1-j) + (j-1)/l*((l+1)*(2*k+1-j)+1)
		gtR := j + (l+1)*j*(2*k+1-j) + j/l*((l+1)*(2*k-j)+1)
		in.GTilde.LPlus[i], in.GTilde.LMinus[i] = gtL, gtL
		in.GTilde.RPlus[i], in.GTilde.RMinus[i] = gtR, gtR
		in.Delta[i] = 2 * (l + 1) / l * ((l+1)*(k-j) + 1)
		in.E[i] = 2 * (l + 1) / l * ((l + 1) * (k + 1 - j))

		// mu on the target branch.
		in.Mu.RPlus[i] = (1 / d * ((k + 1 - j) + (k+1-j)/l)) * l
		in.Mu.LMinus[i] = (1 / d * ((k + 1 - j) + (k-j)/l)) * l
		in.Mu.LPlus[i] = 1 / d * ((k + 2 - j) + (k+1-j)/l)
		in.Mu.RMinus[i] = 1 / d * ((k - j) + (k-j)/l)

		// g and its gaps.
		gL := (l + 1) * (k + 1 - j) * (j + (j-1)/l)
		gR := (l + 1) * (j*(k+1-j) + j*(k-j)/l)
		in.G.LPlus[i], in.G.LMinus[i] = gL, gL
		in.G.RPlus[i], in.G.RMinus[i] = gR, gR
		in.DeltaGa[i] = -(l + 1) * ((k - 2*j) + (k-2*j+1)/l)
		in.DeltaGc[i] = -(l + 1) * ((k + 2 - 2*j) + (k-2*j+1)/l)

		// q and its gaps.
		qL := (k - j + 1 + (k-j+1)/l) / d
		qR := (k - j + 1 + (k-j)/l) / d
		in.Q.LPlus[i], in.Q.LMinus[i] = qL, qL
		in.Q.RPlus[i], in.Q.RMinus[i] = qR, qR
		in.SmallDelta[i] = 1 / d * (l + 1) / l
		in.Epsilon[i] = 1 / d * (l + 1) / l

		// Rescaled G_j^(p)(0), proof of Lemma 'Gjp_init'.
		// Paper discrepancy (statement of Lemma 'Gjp_init'): it confines the
		// negative G_j^(b), G_j^(d) to depths l <= j <= r(W,K,L) <= K-1, but these
		// values (which the exact chain confirms) give G_K^(d)(0) < 0, e.g.
		// -6/11 at W = 2, K = 3, L = 2, and at W = 2, K = 15, L = 5; for W = 1 it
		// holds for every K, L (TestGjpInitRightEnd). G^(a), G^(c) > 0 holds.
		l1 := l + 1
		in.GradA[i] = 2 * l1 / (l * d) * (l1*l1*j*(k-j) + j*(w*(l*l-1)+2*l1) + (w-1)*(l1*k+1))
		in.GradB[i] = 2 * l1 / (l * l * d) * (l1*l1*j*j - l1*(k*l1+(l-1)*(w-1))*j + l*(w-1)*(k*l+k+1))
		in.GradC[i] = 2 * l1 / (l * l * d) * (w*(k*l+k+l) + l1*l1*(j-1)*(k-j) + l1*(j-1)*(l*w+l-w+1))
		in.GradD[i] = 2 * l1 / (l * d) * (l1*l1*j*j - l1*((k+1)*l1+w*(l-1))*j + l*w*(k*l+k+l))
	}
	return in
}

// InitProbabilities returns the pretrained transition probabilities of
// Section 4.1, a_j = d_j = 1/(L+1) and b_j = c_j = L/(L+1), for K diamonds
// of L multiedges (the zero ABCD unless K, L >= 1).
func InitProbabilities(K, L int) ABCD {
	if !theoryShapeOK(1, K, L) {
		return ABCD{}
	}
	lo, hi := 1/float64(L+1), float64(L)/float64(L+1)
	p := ABCD{make([]float64, K), make([]float64, K), make([]float64, K), make([]float64, K)}
	for i := range K {
		p.A[i], p.B[i], p.C[i], p.D[i] = lo, hi, hi, lo
	}
	return p
}

// theoryNaNs returns k NaNs.
func theoryNaNs(k int) []float64 {
	s := make([]float64, k)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}
