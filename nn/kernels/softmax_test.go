package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxRowsRepeat: SoftmaxRowsRepeat gives SoftmaxRows's values, and
// LogSoftmaxRowsRepeat LogSoftmaxRows's, bit for bit on tables of a prefix, copies of one block of rows (some copies
// made to differ in one value) and a suffix of a few entries, so that the
// copies fall before, across and inside SoftmaxRows's one-by-one tail; and
// with a value out of the vector range. It copies where it may.
func TestSoftmaxRowsRepeat(t *testing.T) { checkSoftmaxRowsRepeat(t) }

func checkSoftmaxRowsRepeat(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 22))
	copiedAny, backAny := false, false
	// odd is an argument whose exponential differs in the last place
	// between the four-wide path and the one-by-one one, and so does the
	// softmax of the row [0, odd]: put in the block, a copy in
	// SoftmaxRows's tail must not be copied.
	odd := math.NaN()
	if haveAVX {
		var four [4]float64
		for odd != odd {
			v := -rng.ExpFloat64()
			four[0] = v
			expsAVX(four[:], four[:], 0, &expConsts, &expTable[0], false)
			e := Exp(v)
			if four[0]*(1/(1+four[0])) != e*(1/(1+e)) {
				odd = v
			}
		}
	}
	for round := range 4000 {
		var offsets []int
		var x []float64
		addRow := func(vals []float64) {
			if len(offsets) == 0 {
				offsets = append(offsets, 0)
			}
			x = append(x, vals...)
			offsets = append(offsets, len(x))
		}
		randRow := func() []float64 {
			v := make([]float64, 1+rng.IntN(6))
			for i := range v {
				v[i] = 3 * rng.NormFloat64()
			}
			return v
		}
		for range rng.IntN(4) {
			addRow(randRow())
		}
		block := make([][]float64, 1+rng.IntN(4))
		for i := range block {
			block[i] = randRow()
		}
		if odd == odd && round%2 == 0 {
			block[len(block)-1] = []float64{0, odd}
		}
		first := len(offsets) - 1
		if first < 0 {
			first = 0
		}
		var reps []Repeat
		copies := 1 + rng.IntN(5)
		for c := range copies {
			row := len(offsets) - 1
			if row < 0 {
				row = 0
			}
			if c > 0 {
				reps = append(reps, Repeat{Row: row, From: first, Rows: len(block)})
			}
			for _, r := range block {
				r = append([]float64(nil), r...)
				if c > 0 && rng.IntN(5) == 0 {
					r[rng.IntN(len(r))] += 1e-12 // differs in a low bit or so
				}
				addRow(r)
			}
		}
		for range rng.IntN(3) {
			r := randRow()
			addRow(r[:min(len(r), 1+rng.IntN(2))])
		}
		if round%11 == 0 {
			x[rng.IntN(len(x))] = -800 // out of the vector range: every exponential one by one
		}
		if err := CheckRepeats(offsets, reps); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want := make([]float64, len(x))
		SoftmaxRows(want, x, offsets)
		got := append([]float64(nil), x...) // in place, as ProbsInto
		copied := make([]bool, len(reps))
		SoftmaxRowsRepeat(got, got, offsets, reps, copied)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("round %d (offsets %v, repeats %v, copied %v): entry %d: got %v, want %v", round, offsets, reps, copied, i, got[i], want[i])
			}
		}
		for _, c := range copied {
			copiedAny = copiedAny || c
		}
		// The log-softmax: log-probabilities (in place), probabilities
		// and the logs of the row sums.
		rows := len(offsets) - 1
		wantOut, wantProb, wantLSE := make([]float64, len(x)), make([]float64, len(x)), make([]float64, rows)
		LogSoftmaxRows(wantOut, wantProb, x, offsets, wantLSE)
		gotOut, gotProb, gotLSE := append([]float64(nil), x...), make([]float64, len(x)), make([]float64, rows)
		LogSoftmaxRowsRepeat(gotOut, gotProb, gotOut, offsets, gotLSE, reps, copied)
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"log-probability", gotOut, wantOut}, {"probability", gotProb, wantProb}, {"log of the row sum", gotLSE, wantLSE}} {
			for i := range c.want {
				if math.Float64bits(c.got[i]) != math.Float64bits(c.want[i]) {
					t.Fatalf("round %d (offsets %v, repeats %v, copied %v): log-softmax: %s %d: got %v, want %v", round, offsets, reps, copied, c.name, i, c.got[i], c.want[i])
				}
			}
		}
		// Its backward, with weights that repeat as the values do (and
		// some that do not).
		g := make([]float64, len(x))
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		for _, r := range reps {
			if rng.IntN(4) > 0 {
				s, f := offsets[r.Row], offsets[r.From]
				copy(g[s:offsets[r.Row+r.Rows]], g[f:])
			}
		}
		wantGrad, gotGrad := make([]float64, len(x)), make([]float64, len(x))
		LogSoftmaxRowsBackward(wantGrad, wantProb, g, offsets)
		LogSoftmaxRowsBackwardRepeat(gotGrad, gotProb, g, offsets, reps, copied)
		for i := range wantGrad {
			if math.Float64bits(gotGrad[i]) != math.Float64bits(wantGrad[i]) {
				t.Fatalf("round %d (offsets %v, repeats %v, copied %v): backward %d: got %v, want %v", round, offsets, reps, copied, i, gotGrad[i], wantGrad[i])
			}
		}
		for _, c := range copied {
			backAny = backAny || c
		}
	}
	if !copiedAny || !backAny {
		t.Fatalf("no repeat was copied (forward %v, backward %v)", copiedAny, backAny)
	}
	bad := [][]Repeat{{{Row: 1, From: 1, Rows: 1}}, {{Row: 2, From: 0, Rows: 3}}, {{Row: 3, From: 0, Rows: 1}, {Row: 2, From: 0, Rows: 1}}, {{Row: 2, From: 0, Rows: 1}}, {{Row: 3, From: 0, Rows: 2}}}
	for _, reps := range bad {
		if err := CheckRepeats([]int{0, 2, 4, 7, 9}, reps); err == nil {
			t.Errorf("CheckRepeats(%v): no error", reps)
		}
	}
}
