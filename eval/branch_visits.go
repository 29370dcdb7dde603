package eval

// visits solves the adjoint system nu = e_entry + Q^T nu on branch b: the
// expected number of visits to every state of the branch during one
// excursion that starts at the entry state f -> u_{1,l} and ends at the
// fork-incoming state or (target true) the target leaf. The absorbing
// states are counted once when reached, so nu(fork-incoming) is the return
// probability and nu(leaf-incoming) the success probability. On the target
// branch def holds, at the forward states' ids, the deficits written by
// values; off it def is nil.
//
// It mirrors values: here group g+1 depends on group g only through the
// flow out of f_g, so nu_{g+1} = Y'_{g+1} + V'_{g+1} nu^f_g, eliminated from
// the leaf with one m_g x m_g solve per group, then substituted from the root.
func (w *scratch) visits(k blocks, target bool, def, out []float64) bool {
	b := k.b
	G := b.Groups()
	w.ensure(G, maxMulti(b))
	for g := G - 1; g >= 0; g-- {
		m, mp := b.M(g), prevM(b, g)
		y := grow(w.y[g], 2*m)
		v := grow(w.v[g], 2*m*mp)
		w.y[g], w.v[g] = y, v
		yf, yb := y[:m], y[m:]
		vf, vb := v[:m*mp], v[m*mp:]
		// nu^b_g = r' + X' nu^f_g: flow into b_g from f_g (P^{fb})^T and
		// from b_{g+1} (P^{bb}_{g+1})^T.
		x := grow(w.x, m*m)
		if !(target && g == G-1) { // the target leaf emits nothing
			w.fr = k.fRows(g, w.fr)
			for j, row := range w.fr {
				for i, p := range row[:m] {
					x[i*m+j] = p
				}
			}
		}
		if g < G-1 {
			mn := b.M(g + 1)
			ynb, vnb := w.y[g+1][mn:], w.v[g+1][mn*m:]
			w.nr = k.bRows(g+1, w.nr)
			for l, row := range w.nr {
				for i, p := range row[:m] { // P^{bb}_{g+1}: (mn x m)
					yb[i] += p * ynb[l]
					for j := range m {
						x[i*m+j] += p * vnb[l*m+j]
					}
				}
			}
		}
		if g == 0 {
			// The entry is visited once per excursion; b_0 only absorbs.
			yf[0] = 1
			yb[0] += x[0]
			continue
		}
		// (I - (P^{bf})^T X') nu^f_g = (P^{bf})^T r' + (P^{ff}_{g-1})^T nu^f_{g-1}.
		// Factor the transpose T = I - X'^T P^{bf}, whose row sums are
		// def + X'^T (P^{bb} 1) with def from the value solve (GTH), then
		// solve with T^T.
		nr := 1 + mp
		t := grow(w.s, m*m)
		deficit := grow(w.deficit, m)
		rhs := grow(w.rhs, m*nr)
		w.rhs = rhs
		if target {
			copy(deficit, def[b.Fwd(g, 0):b.Fwd(g, 0)+m])
		}
		w.br = k.bRows(g, w.br)
		for l, row := range w.br {
			left := 0.0
			for _, p := range row[:mp] {
				left += p
			}
			for i := range m {
				xli := x[l*m+i]
				deficit[i] += xli * left
				for j, p := range row[mp : mp+m] { // X'^T P^{bf}
					t[i*m+j] -= xli * p
				}
			}
			for i, p := range row[mp : mp+m] { // (P^{bf})^T r'
				rhs[i*nr] += p * yb[l]
			}
		}
		w.fr = k.fRows(g-1, w.fr)
		for j, row := range w.fr {
			for i, p := range row[mp : mp+m] { // (P^{ff}_{g-1})^T: (m x mp)
				rhs[i*nr+1+j] = p
			}
		}
		if !gthFactor(t, deficit, m) {
			return false
		}
		gthSolveT(t, m, rhs, nr)
		for i := range m {
			yf[i] = rhs[i*nr]
			copy(vf[i*mp:(i+1)*mp], rhs[i*nr+1:(i+1)*nr])
		}
		// Y'^b = r' + X' Y'^f; V'^b = X' V'^f.
		for i := range m {
			for l := range m {
				xl := x[i*m+l]
				yb[i] += xl * yf[l]
				for j := range mp {
					vb[i*mp+j] += xl * vf[l*mp+j]
				}
			}
		}
	}
	for g := range G {
		m, mp := b.M(g), prevM(b, g)
		y, v := w.y[g], w.v[g]
		prev := 0 // first id of f_{g-1}
		if g > 0 {
			prev = b.Fwd(g-1, 0)
		}
		for r := range 2 * m {
			val := y[r]
			for j := range mp {
				val += v[r*mp+j] * out[prev+j]
			}
			out[b.Start[g]+r] = val
		}
	}
	return true
}
