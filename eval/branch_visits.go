package eval

// visits solves the adjoint system nu = e_entry + Q^T nu on branch b: the
// expected number of visits to every state of the branch during one
// excursion that starts at the entry state f -> u_{1,l} and ends at the
// fork-incoming state or (target true) the target leaf. The absorbing
// states are counted once when reached, so nu(fork-incoming) is the return
// probability and nu(leaf-incoming) the success probability.
//
// It mirrors values: here group g+1 depends on group g only through the
// flow out of f_g, so nu_{g+1} = Y'_{g+1} + V'_{g+1} nu^f_g, eliminated from
// the leaf with one m_g x m_g solve per group, then substituted from the root.
func (w *scratch) visits(k blocks, target bool, out []float64) bool {
	b := k.b
	G := b.Groups()
	w.ensure(G, maxMulti(b))
	for g := G - 1; g >= 0; g-- {
		m := b.M(g)
		mp := 0
		if g > 0 {
			mp = b.M(g - 1)
		}
		y := grow(w.y[g], 2*m)
		v := grow(w.v[g], 2*m*mp)
		yf, yb := y[:m], y[m:]
		vf, vb := v[:m*mp], v[m*mp:]
		// nu^b_g = r' + X' nu^f_g: flow into b_g from f_g (P^{fb})^T and
		// from b_{g+1} (P^{bb}_{g+1})^T.
		x := w.x[:m*m]
		for i := range x {
			x[i] = 0
		}
		leafAbsorbs := target && g == G-1
		for i := 0; i < m; i++ {
			if !leafAbsorbs {
				for j := 0; j < m; j++ {
					x[i*m+j] = k.pfb(g, j, i)
				}
			}
			if g == G-1 {
				continue
			}
			mn := b.M(g + 1)
			ynb, vnb := w.y[g+1][mn:], w.v[g+1][mn*m:]
			for l := 0; l < mn; l++ {
				p := k.pbb(g+1, l, i)
				yb[i] += p * ynb[l]
				for j := 0; j < m; j++ {
					x[i*m+j] += p * vnb[l*m+j]
				}
			}
		}
		if g == 0 {
			// The entry is visited once per excursion; b_0 only absorbs.
			yf[0] = 1
			yb[0] += x[0]
			w.y[g], w.v[g] = y, v
			continue
		}
		// (I - (P^{bf})^T X') nu^f_g = (P^{bf})^T r' + (P^{ff}_{g-1})^T nu^f_{g-1}.
		s := w.s[:m*m]
		nr := 1 + mp
		rhs := grow(w.rhs, m*nr)
		w.rhs = rhs
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				acc := 0.0
				for l := 0; l < m; l++ {
					acc += k.pbf(g, l, i) * x[l*m+j]
				}
				s[i*m+j] = -acc
			}
			s[i*m+i]++
			for l := 0; l < m; l++ {
				rhs[i*nr] += k.pbf(g, l, i) * yb[l]
			}
			for j := 0; j < mp; j++ {
				rhs[i*nr+1+j] = k.pff(g-1, j, i)
			}
		}
		if !w.solve(m, nr, rhs) {
			return false
		}
		for i := 0; i < m; i++ {
			yf[i] = rhs[i*nr]
			copy(vf[i*mp:(i+1)*mp], rhs[i*nr+1:(i+1)*nr])
		}
		// Y'^b = r' + X' Y'^f; V'^b = X' V'^f.
		for i := 0; i < m; i++ {
			for l := 0; l < m; l++ {
				xl := x[i*m+l]
				yb[i] += xl * yf[l]
				for j := 0; j < mp; j++ {
					vb[i*mp+j] += xl * vf[l*mp+j]
				}
			}
		}
		w.y[g], w.v[g] = y, v
	}
	for g := 0; g < G; g++ {
		m := b.M(g)
		y, v := w.y[g], w.v[g]
		mp := 0
		if g > 0 {
			mp = b.M(g - 1)
		}
		for r := 0; r < 2*m; r++ {
			val := y[r]
			for j := 0; j < mp; j++ {
				val += v[r*mp+j] * out[b.Fwd(g-1, j)]
			}
			out[b.Start[g]+r] = val
		}
	}
	return true
}
