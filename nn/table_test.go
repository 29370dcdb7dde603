package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestTableLoss: over two fills of one graph (the second with fewer
// tokens, leaving unused rows), the value equals a plain-Go sum of
// weighted log-softmaxes of table[entries] + offsets, and autodiff's
// gradient with respect to the table equals central finite differences
// of it.
func TestTableLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	const p = 7
	table := make([]float64, p)
	for i := range table {
		table[i] = rng.NormFloat64()
	}
	g := G.NewGraph()
	tn := G.NewVector(g, G.Float64, G.WithShape(p), G.WithName("B"), G.WithValue(tensor.New(tensor.WithShape(p), tensor.WithBacking(append([]float64(nil), table...)))))
	tl, err := NewTableLoss(tn, 5)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(tl.Cost, tn)
	if err != nil {
		t.Fatal(err)
	}
	var val, grad G.Value
	G.Read(tl.Cost, &val)
	G.Read(grads[0], &grad)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	for fill, c := range []struct {
		rows, entries, taken []int
		w                    []float64
	}{
		{[]int{0, 3, 5, 6, 10}, []int{0, 1, 2, 3, 4, 5, 6, 0, 2, 6}, []int{2, 0, 0, 3}, []float64{0.5, -1.25, 2, 0.75}}, // a one-slot row among them
		{[]int{0, 2, 4}, []int{3, 1, 1, 6}, []int{1, 0}, []float64{-0.5, 1.5}},
	} {
		offsets := make([]float64, len(c.entries))
		for i := range offsets {
			offsets[i] = 800 * rng.NormFloat64() // large gaps stay exact
		}
		direct := func(tb []float64) float64 {
			sum := 0.0
			for r := 0; r+1 < len(c.rows); r++ {
				m := math.Inf(-1)
				for k := c.rows[r]; k < c.rows[r+1]; k++ {
					m = max(m, tb[c.entries[k]]+offsets[k])
				}
				z := 0.0
				for k := c.rows[r]; k < c.rows[r+1]; k++ {
					z += math.Exp(tb[c.entries[k]] + offsets[k] - m)
				}
				k := c.rows[r] + c.taken[r]
				sum += c.w[r] * (tb[c.entries[k]] + offsets[k] - m - math.Log(z))
			}
			return sum
		}
		if err := tl.Fill(c.entries, c.rows, c.taken, offsets, c.w); err != nil {
			t.Fatal(err)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		if got, want := val.Data().(float64), direct(table); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("fill %d: value %v, want %v", fill, got, want)
		}
		gd := grad.Data().([]float64)
		for i := range table {
			const eps = 1e-6
			up := append([]float64(nil), table...)
			up[i] += eps
			down := append([]float64(nil), table...)
			down[i] -= eps
			if fd := (direct(up) - direct(down)) / (2 * eps); math.Abs(gd[i]-fd) > 1e-6 {
				t.Errorf("fill %d: d/dtable[%d]: autodiff %v, finite differences %v", fill, i, gd[i], fd)
			}
		}
		vm.Reset()
		clear(gd)
	}
	for _, bad := range []struct {
		name                 string
		rows, entries, taken []int
	}{
		{"taken outside its row", []int{0, 2}, []int{0, 1}, []int{2}},
		{"a row without slots", []int{0, 0, 1}, []int{0}, []int{0, 0}},
		{"an entry outside the table", []int{0, 1}, []int{p}, []int{0}},
		{"more tokens than capacity", []int{0, 1, 2, 3, 4, 5, 6}, []int{0, 1, 2, 3, 4, 5}, []int{0, 0, 0, 0, 0, 0}},
	} {
		if err := tl.Fill(bad.entries, bad.rows, bad.taken, make([]float64, len(bad.entries)), make([]float64, len(bad.taken))); err == nil {
			t.Errorf("%s: got no error", bad.name)
		}
	}
}

// TestTableLossManyBlocks: a fill of several blocks gives the same
// gradient, bit for bit, on 1 and on 4 goroutines, and equals a plain
// serial sum of w_t (1{e = a_t} - pi_t(e)) to 1e-12.
func TestTableLossManyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const p, n = 11, 3*tableBlock + 17
	table := make([]float64, p)
	for i := range table {
		table[i] = rng.NormFloat64()
	}
	rows, entries, taken := []int{0}, []int{}, []int{}
	var offsets, w []float64
	for range n {
		r := 1 + rng.IntN(4)
		for range r {
			entries = append(entries, rng.IntN(p))
			offsets = append(offsets, rng.NormFloat64())
		}
		rows = append(rows, len(entries))
		taken = append(taken, rng.IntN(r))
		w = append(w, rng.NormFloat64())
	}
	want := make([]float64, p)
	for k := range n {
		m, z := math.Inf(-1), 0.0
		for s := rows[k]; s < rows[k+1]; s++ {
			m = max(m, table[entries[s]]+offsets[s])
		}
		for s := rows[k]; s < rows[k+1]; s++ {
			z += math.Exp(table[entries[s]] + offsets[s] - m)
		}
		for s := rows[k]; s < rows[k+1]; s++ {
			want[entries[s]] -= w[k] * math.Exp(table[entries[s]]+offsets[s]-m) / z
		}
		want[entries[rows[k]+taken[k]]] += w[k]
	}
	grad := func(procs int) []float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		g := G.NewGraph()
		tn := G.NewVector(g, G.Float64, G.WithShape(p), G.WithName("B"), G.WithValue(tensor.New(tensor.WithShape(p), tensor.WithBacking(append([]float64(nil), table...)))))
		tl, err := NewTableLoss(tn, n+3)
		if err != nil {
			t.Fatal(err)
		}
		grads, err := G.Grad(tl.Cost, tn)
		if err != nil {
			t.Fatal(err)
		}
		var gv G.Value
		G.Read(grads[0], &gv)
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		if err := tl.Fill(entries, rows, taken, offsets, w); err != nil {
			t.Fatal(err)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), gv.Data().([]float64)...)
	}
	one, four := grad(1), grad(4)
	for e := range want {
		if one[e] != four[e] {
			t.Errorf("d/dtable[%d]: %v on 1 goroutine, %v on 4", e, one[e], four[e])
		}
		if math.Abs(one[e]-want[e]) > 1e-12*math.Max(1, math.Abs(want[e])) {
			t.Errorf("d/dtable[%d] = %v, want %v", e, one[e], want[e])
		}
	}
}
