package ops

import (
	"math/rand/v2"
	"testing"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
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

// BenchmarkTableClippedSurrogate times the transformer's table pass op
// under PPO (TableClippedSurrogate): its forward and its backward on one
// fill of 32768 tokens (the trainers' chunk) of 6 slots each (a trained
// row's L+1 next states at the paper's size), over a table of 16200
// entries (the paper's valid transitions), on all cores. B/token counts
// what the two passes must read and write of memory per token (the fill's
// ints as the layout keeps them, 8 bytes each), for the limit beside it:
// the forward reads first, count, taken, 6 offsets, the old
// log-probability and both advantages, and writes 6 probabilities and the
// ratio; the backward reads the ratio, both advantages, taken, first,
// count and 6 probabilities.
func BenchmarkTableClippedSurrogate(b *testing.B) {
	const capacity, r, p = 32768, 6, 16200
	rng := rand.New(rand.NewPCG(3, 4))
	lay := NewTableLayout(capacity, r)
	old, pos, neg := make([]float64, capacity), make([]float64, capacity), make([]float64, capacity)
	for t := range capacity {
		off := lay.Set(t, rng.IntN(p-r+1), r, rng.IntN(r))
		for j := range off {
			off[j] = rng.NormFloat64()
		}
		old[t] = -1.8 + 0.1*rng.NormFloat64() // about log(1/6): ratios near 1, some clipped
		if a := rng.NormFloat64(); a > 0 {
			pos[t] = a
		} else {
			neg[t] = a
		}
	}
	lay.SetLen(capacity)
	table := make([]float64, p)
	for i := range table {
		table[i] = 0.1 * rng.NormFloat64()
	}
	vec := func(x []float64) G.Value { return tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(x)) }
	fwd := &tableSurrogate{lay: lay, p: p, eps: 0.2}
	bwd := &tableSurrogateDiff{fwd: fwd}
	in := []G.Value{vec(table), vec(old), vec(pos), vec(neg)}
	var fwdTime, bwdTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		out, err := fwd.Do(in...)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := bwd.Do(in[2], in[3], out, G.NewF64(1)); err != nil {
			b.Fatal(err)
		}
		fwdTime, bwdTime = fwdTime+t1.Sub(t0), bwdTime+time.Since(t1)
	}
	tokens := float64(b.N * capacity)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tokens, "ns/token")
	b.ReportMetric(float64(fwdTime.Nanoseconds())/tokens, "fwd-ns/token")
	b.ReportMetric(float64(bwdTime.Nanoseconds())/tokens, "bwd-ns/token")
	const bytes = (3+r+3)*8 + (r+1)*8 + (3+3+r)*8
	b.ReportMetric(bytes, "B/token")
}
