package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TestUnembedMatchesStock: the fused unembedding and log-softmax and its
// hand-written backward equal stock.Unembed and gorgonia's autodiff of
// it, with U stored by row (V, D) or by column (D, V), with and without
// the per-entry table B, the loss weighting every slot, masked ones
// included (their log-probabilities are about -1e9).
func TestUnembedMatchesStock(t *testing.T) {
	for _, tc := range []struct {
		v, d, b, n       int
		transposed, bias bool
	}{
		{6, 3, 2, 4, false, true},
		{6, 3, 2, 4, true, false},
		{8, 5, 3, 3, false, false},
		{5, 2, 4, 5, true, true},
	} {
		t.Run(fmt.Sprintf("V%d-D%d-B%d-T%d-transposed=%v-bias=%v", tc.v, tc.d, tc.b, tc.n, tc.transposed, tc.bias), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(67, uint64(tc.v*tc.d)))
			s := randomSupport(rng, tc.v)
			lay := randomLayout(rng, s, tc.b, tc.n, 2, false)
			n, r := tc.b*tc.n, lay.Width()
			params := []param{randParam(rng, "h", 1, n, tc.d), randParam(rng, "U", 1, tc.v, tc.d)}
			if tc.transposed {
				params[1] = randParam(rng, "U", 1, tc.d, tc.v)
			}
			if tc.bias {
				params = append(params, randParam(rng, "B", 1, len(s.next)))
			}
			bias := func(in G.Nodes) *G.Node {
				if tc.bias {
					return in[2]
				}
				return nil
			}
			var ix Indices
			lay.Indices(&ix)
			fused := func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return Unembed(lay, in[0], in[1], bias(in), tc.transposed)
			}
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				u := in[1]
				if tc.transposed {
					u = G.Must(G.Transpose(u)) // (D, V) -> (V, D)
				}
				return stock.Unembed(in[0], u, bias(in), intInput(g, "slot_pos", ix.SlotPos), intInput(g, "slot_next", ix.SlotNext),
					intInput(g, "slot_entry", ix.SlotEntry), floatInput(g, "valid", ix.Valid), floatInput(g, "mask", ix.Mask), n, r)
			}
			checkAgainstStock(t, fused, ref, params, randomVector(rng, n*r, 1))
		})
	}
}

// TestUnembedRunsAreSlotBySlot: the unembedding's forward, which takes the
// logits of a run of consecutive next tokens with one Dots, and its
// backward, which adds their output embeddings into dh with one Axpys
// and sums dU on each core over a range of next tokens, give bit for bit
// what one Dot and one Axpy per slot, in slot order, give, on rows made
// of runs, of scattered tokens and of both (and enough slots for dU's
// ranges to be split over two cores where there are two).
func TestUnembedRunsAreSlotBySlot(t *testing.T) {
	const v, d, b, n = 40, 21, 48, 64
	rng := rand.New(rand.NewPCG(71, 72))
	s := support{offsets: []int{0}}
	for x := range v {
		k := 1 + rng.IntN(6)
		switch x % 3 {
		case 0: // one run
			a := rng.IntN(v - k)
			for j := range k {
				s.next = append(s.next, a+j)
			}
		case 1: // scattered
			s.next = append(s.next, rng.Perm(v)[:k]...)
		default: // a run of two, then others
			a := rng.IntN(v - 2)
			s.next = append(s.next, a, a+1)
			for _, c := range rng.Perm(v)[:k] {
				if c != a && c != a+1 {
					s.next = append(s.next, c)
				}
			}
		}
		s.offsets = append(s.offsets, len(s.next))
	}
	lay := randomLayout(rng, s, b, n, 2, false)
	if len(lay.aslot) < 2*4096 {
		t.Fatalf("%d slots: want at least 8192, for outputGrads to split them over two cores", len(lay.aslot))
	}
	r := lay.Width()
	hn, u, bias := randomVector(rng, b*n*d, 1), randomVector(rng, v*d, 1), randomVector(rng, len(s.next), 1)
	g := randomVector(rng, b*n*r, 1)
	k := &unembedKernel{lay: lay, d: d, v: v, hasB: true}
	out := make([]float64, b*n*r)
	if err := k.forward(out, [][]float64{hn, u, bias}); err != nil {
		t.Fatal(err)
	}
	grads := [][]float64{make([]float64, b*n*d), make([]float64, v*d), make([]float64, len(s.next))}
	for _, gr := range grads { // the backward overwrites every value
		for i := range gr {
			gr[i] = math.NaN()
		}
	}
	if err := k.backward(grads, [][]float64{hn, u, bias}, g); err != nil {
		t.Fatal(err)
	}
	same := func(what string, got, want float64) {
		t.Helper()
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: got %v, want %v bit for bit", what, got, want)
		}
	}
	du := make([]float64, v*d)
	for p := range b * n {
		x, h := lay.tok[p], hn[p*d:(p+1)*d]
		e0, nv := lay.offsets[x], lay.offsets[x+1]-lay.offsets[x]
		z := make([]float64, nv)
		for j := range z {
			a := lay.next[e0+j]
			z[j] = kernels.Dot(h, u[a*d:(a+1)*d]) + bias[e0+j]
		}
		pi := make([]float64, nv)
		kernels.LogSoftmax(z, pi, z)
		sum := 0.0
		for _, gv := range g[p*r : (p+1)*r] {
			sum += gv
		}
		dh := make([]float64, d)
		for j := range z {
			same(fmt.Sprintf("position %d slot %d log-probability", p, j), out[p*r+j], z[j])
			a := lay.next[e0+j]
			kernels.Axpy(dh, g[p*r+j]-pi[j]*sum, u[a*d:(a+1)*d])
			kernels.Axpy(du[a*d:(a+1)*d], g[p*r+j]-pi[j]*sum, h)
		}
		for i := range dh {
			same(fmt.Sprintf("position %d dh[%d]", p, i), grads[0][p*d+i], dh[i])
		}
	}
	for i := range du {
		same(fmt.Sprintf("dU[%d][%d]", i/d, i%d), grads[1][i], du[i])
	}
}
