package ops

import (
	"math/rand/v2"
	"testing"
)

// tableBenchFill is the table benchmarks' op: a full fill of 32768 tokens
// of 2 to 6 slots (one taken) over a table of 16200 entries, the paper's
// size, with random offsets and table values.
func tableBenchFill() (k *tableKernel, table []float64, rng *rand.Rand) {
	const capacity, r, p = 32768, 6, 16200
	rng = rand.New(rand.NewPCG(1, 2))
	lay := NewTableLayout(capacity, r)
	for t := range capacity {
		c := 2 + rng.IntN(r-1)
		off := lay.Set(t, rng.IntN(p-c), c, rng.IntN(c))
		for j := range off {
			off[j] = rng.NormFloat64()
		}
	}
	lay.n = capacity
	table = make([]float64, p)
	for i := range table {
		table[i] = rng.NormFloat64()
	}
	return &tableKernel{lay: lay, p: p}, table, rng
}

// BenchmarkTableForward times TableLogSoftmax's forward on the fill, on
// all cores.
func BenchmarkTableForward(b *testing.B) {
	k, table, _ := tableBenchFill()
	out := make([]float64, k.lay.capacity*k.lay.r)
	for b.Loop() {
		if err := k.forward(out, [][]float64{table}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k.lay.capacity), "ns/token")
}

// BenchmarkTableBackward times TableLogSoftmax's backward on the fill,
// with a gradient on every token's taken slot, on all cores.
func BenchmarkTableBackward(b *testing.B) {
	k, table, rng := tableBenchFill()
	lay := k.lay
	out := make([]float64, lay.capacity*lay.r)
	if err := k.forward(out, [][]float64{table}); err != nil {
		b.Fatal(err)
	}
	g, grad := make([]float64, lay.capacity*lay.r), make([]float64, k.p)
	for t := range lay.capacity {
		g[lay.taken[t]] = rng.NormFloat64()
	}
	for b.Loop() {
		if err := k.backward([][]float64{grad}, nil, g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lay.capacity), "ns/token")
}
