package eval

// Subtraction-free elimination for the M-matrices I - P of absorbing chains
// (Grassmann, Taksar and Heyman, Operations Research 33(5), 1985).
//
// Why not LAPACK's LU: on a branch that is not the target the walk returns
// to the fork with probability 1, so every Schur complement S = I - P^{bf} X
// of the elimination has a row sum (its "deficit": the probability of
// leaving the block) that is tiny compared with its diagonal, and forming
// S_ii = 1 - (P^{bf} X)_ii cancels. Those errors are multiplied by
// (L+1)^2/L per depth: with LU the SFT-limit hitting time at W=K=15, L=5 was
// off by 1.6e-3 (see TestLimitsMatchClosedForms). Here the deficits are
// carried as sums of nonnegative terms, every pivot is rebuilt as deficit +
// sum of |off-diagonals|, and no step subtracts, so the relative error stays
// at rounding level whatever the conditioning.

// gthFactor factors in place the m x m row-major M-matrix a (a_ij <= 0 off
// the diagonal) whose row sums are deficit (>= 0, given accurately): a = L U
// without pivoting, the multipliers l_ik stored below the diagonal. The
// diagonal of a is ignored on entry. It reports false if a pivot is zero
// (the block can never be left).
func gthFactor(a, deficit []float64, m int) bool {
	for k := 0; k < m; k++ {
		// Pivot: the active row's deficit plus its off-diagonal mass.
		piv := deficit[k]
		for j := k + 1; j < m; j++ {
			piv -= a[k*m+j]
		}
		if !(piv > 0) {
			return false
		}
		a[k*m+k] = piv
		for i := k + 1; i < m; i++ {
			l := a[i*m+k] / piv // <= 0
			a[i*m+k] = l
			if l == 0 {
				continue
			}
			for j := k + 1; j < m; j++ {
				if j != i {
					a[i*m+j] -= l * a[k*m+j] // both factors <= 0: adds a nonpositive amount
				}
			}
			deficit[i] -= l * deficit[k]
		}
	}
	return true
}

// gthSolve overwrites b (m x nrhs, row-major) with a^{-1} b using the
// factors of gthFactor. For nonnegative b every step adds nonnegative terms.
func gthSolve(a []float64, m int, b []float64, nrhs int) {
	for i := 0; i < m; i++ { // L y = b, unit lower triangular
		for k := 0; k < i; k++ {
			if l := a[i*m+k]; l != 0 {
				for c := 0; c < nrhs; c++ {
					b[i*nrhs+c] -= l * b[k*nrhs+c]
				}
			}
		}
	}
	for i := m - 1; i >= 0; i-- { // U x = y
		for j := i + 1; j < m; j++ {
			if u := a[i*m+j]; u != 0 {
				for c := 0; c < nrhs; c++ {
					b[i*nrhs+c] -= u * b[j*nrhs+c]
				}
			}
		}
		for c := 0; c < nrhs; c++ {
			b[i*nrhs+c] /= a[i*m+i]
		}
	}
}

// gthSolveT overwrites b with a^{-T} b: a^T = U^T L^T.
func gthSolveT(a []float64, m int, b []float64, nrhs int) {
	for i := 0; i < m; i++ { // U^T w = b
		for j := 0; j < i; j++ {
			if u := a[j*m+i]; u != 0 {
				for c := 0; c < nrhs; c++ {
					b[i*nrhs+c] -= u * b[j*nrhs+c]
				}
			}
		}
		for c := 0; c < nrhs; c++ {
			b[i*nrhs+c] /= a[i*m+i]
		}
	}
	for i := m - 1; i >= 0; i-- { // L^T x = w
		for k := i + 1; k < m; k++ {
			if l := a[k*m+i]; l != 0 {
				for c := 0; c < nrhs; c++ {
					b[i*nrhs+c] -= l * b[k*nrhs+c]
				}
			}
		}
	}
}
