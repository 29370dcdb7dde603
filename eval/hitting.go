package eval

import (
	"fmt"
	"math"
	"slices"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Analyzer computes exact hitting times, visit counts and hitting-time
// gradients of Markov (bigram) policies on one graph. It reuses its buffers:
// an Analysis is valid until the next call to Analyze.
type Analyzer struct {
	g        *tasks.Graph
	w        scratch
	nt, t    [numCols][]float64 // branch-local values: non-target (time only) and target solves
	tDef     []float64          // target-solve deficits at forward states (see values)
	ntVisits []float64          // expected visits per entry into a non-target branch
	tVisits  []float64          // the same on the target branch
	weights  []float64
	// same[j] is an earlier branch whose shape and probability rows are
	// bitwise identical to branch j's (its solves are then copied), or -1.
	same []int
	// branchConsts are CostWeights' four constants per branch, and
	// weightsFrom the branch each one's weights were copied from (-1).
	branchConsts [][4]float64
	weightsFrom  []int
}

// NewAnalyzer prepares an analyzer for graph g.
func NewAnalyzer(g *tasks.Graph) *Analyzer {
	n := g.NumStates()
	a := &Analyzer{g: g, ntVisits: make([]float64, n), tVisits: make([]float64, n),
		tDef: make([]float64, n), same: make([]int, g.W()), weightsFrom: make([]int, g.W())}
	for c := range numCols {
		a.t[c] = make([]float64, n)
	}
	a.nt[colTime] = make([]float64, n)
	return a
}

// Analysis is the exact analysis of one policy. Targets are 1-based branch
// numbers as in the paper (t_1..t_W).
type Analysis struct {
	a       *Analyzer
	probs   []float64
	visited bool // visit counts solved (lazily, on the first D or CostWeights)
	// HittingTime is the paper's H_f: expected transitions from s0 -> f until
	// the first state whose head is the target, averaged over the uniform
	// target.
	HittingTime float64
	// PerTarget[m-1] is the hitting time of target t_m from s0 -> f.
	PerTarget []float64
	// ForkTime[m-1] is h_x from a fork-incoming state for target t_m.
	ForkTime []float64
	// Entries[m-1][j-1] is the expected number of entries into branch j
	// before hitting t_m.
	Entries [][]float64
	// Success[j-1] is the probability that an entry into branch j reaches
	// its leaf before returning to the fork (p_succ when j is the target).
	Success []float64
	// ReturnTime[j-1] is the expected length of an excursion into branch j
	// when it is not the target (entry to fork-incoming state).
	ReturnTime []float64
}

// Analyze checks probs (one probability per valid transition, aligned with
// the graph's CSR rows) and solves the chain exactly.
func (an *Analyzer) Analyze(probs []float64) (*Analysis, error) {
	g := an.g
	if len(probs) != len(g.Next) {
		return nil, CheckPolicy(g, probs)
	}
	an.findSame(probs)
	if err := checkPolicy(g, probs, an.same); err != nil {
		return nil, err
	}
	W := g.W()
	for j, b := range g.Branches {
		if r := an.same[j]; r >= 0 {
			an.copyBranch(r, j, an.nt[colTime], an.t[colTime], an.t[colReturn], an.t[colSuccess], an.tDef)
			continue
		}
		k := blocks{b: b, probs: probs, offsets: g.Offsets}
		if !an.w.values(k, false, &an.nt, nil) || !an.w.values(k, true, &an.t, an.tDef) {
			return nil, fmt.Errorf("eval: branch %d: singular system: the policy can loop forever without leaving the branch", j+1)
		}
	}
	res := &Analysis{a: an, probs: probs, PerTarget: make([]float64, W), ForkTime: make([]float64, W),
		Entries: make([][]float64, W), Success: make([]float64, W), ReturnTime: make([]float64, W)}
	sigma := probs[g.Offsets[0]:g.Offsets[1]]
	rho := probs[g.Offsets[g.Branches[0].ForkIn()]:g.Offsets[g.Branches[0].ForkIn()+1]]
	for j, b := range g.Branches {
		res.Success[j] = an.t[colSuccess][b.Entry()]
		res.ReturnTime[j] = an.nt[colTime][b.Entry()]
	}
	sum := 0.0
	for m := range W {
		e := g.Branches[m].Entry()
		gm, ret, ps := an.t[colTime][e], an.t[colReturn][e], res.Success[m]
		// Fork level (Appendix B, H_f): from a fork-incoming state,
		// h = 1 + sum_j rho_j h(entry_j), h(entry_j) = T_j + h for j != m and
		// g_m + ret_m h for the target branch.
		num, srcT, srcRet := 1.0, 1.0, 0.0
		for j := range W {
			if j == m {
				num += rho[j] * gm
				srcT += sigma[j] * gm
				srcRet += sigma[j] * ret
				continue
			}
			num += rho[j] * res.ReturnTime[j]
			srcT += sigma[j] * res.ReturnTime[j]
			srcRet += sigma[j]
		}
		den := rho[m] * ps
		if den == 0 {
			return nil, fmt.Errorf("eval: target t%d is never reached: the hitting time is infinite", m+1)
		}
		hf := num / den
		res.ForkTime[m] = hf
		res.PerTarget[m] = srcT + srcRet*hf
		// Entries: N_j = sigma_j + rho_j Phi, Phi = returns to the fork.
		phi := srcRet / den
		res.Entries[m] = make([]float64, W)
		for j := range W {
			res.Entries[m][j] = sigma[j] + rho[j]*phi
		}
		sum += res.PerTarget[m]
	}
	res.HittingTime = sum / float64(W)
	if math.IsInf(res.HittingTime, 0) || math.IsNaN(res.HittingTime) {
		return nil, fmt.Errorf("eval: hitting time %v is beyond float64's range", res.HittingTime)
	}
	return res, nil
}

// findSame marks branches whose solves equal an earlier branch's: the same
// multiedge counts and bitwise the same probability rows (the fork-incoming
// rows, identical for all branches, are not read by the branch solves).
func (an *Analyzer) findSame(probs []float64) {
	g := an.g
	for j, b := range g.Branches {
		an.same[j] = -1
		for r := range j {
			if an.same[r] < 0 && slices.Equal(g.Branches[r].Multi, b.Multi) &&
				slices.Equal(branchProbs(g, r, probs), branchProbs(g, j, probs)) {
				an.same[j] = r
				break
			}
		}
	}
}

// branchProbs is the slice of the policy table holding branch j's rows,
// from its entry state on (the fork-incoming row inside it is the same for
// every branch).
func branchProbs(g *tasks.Graph, j int, probs []float64) []float64 {
	b := g.Branches[j]
	return probs[g.Offsets[b.Entry()]:g.Offsets[b.LeafIn()+2]]
}

// copyBranch copies per-state arrays of branch r onto branch j (same shape).
func (an *Analyzer) copyBranch(r, j int, arrays ...[]float64) {
	br, bj := an.g.Branches[r], an.g.Branches[j]
	lo, hi := br.Start[0], br.LeafIn()+2
	for _, a := range arrays {
		copy(a[bj.Start[0]:], a[lo:hi])
	}
}

// solveVisits computes the visit counts per entry of every branch (once per
// analysis: D and CostWeights need them, hitting times do not).
func (r *Analysis) solveVisits() {
	if r.visited {
		return
	}
	an, g := r.a, r.a.g
	for j, b := range g.Branches {
		if s := an.same[j]; s >= 0 {
			an.copyBranch(s, j, an.ntVisits, an.tVisits)
			continue
		}
		// values succeeded on this branch, so its blocks are invertible.
		k := blocks{b: b, probs: r.probs, offsets: g.Offsets}
		an.w.visits(k, false, nil, an.ntVisits)
		an.w.visits(k, true, an.tDef, an.tVisits)
	}
	r.visited = true
}

// CheckPolicy validates a transition table: one finite probability in [0, 1]
// per valid transition, rows summing to 1, and identical fork-incoming rows
// (the paper fixes them; the exact fork-level solve relies on it).
func CheckPolicy(g *tasks.Graph, probs []float64) error { return checkPolicy(g, probs, nil) }

// checkPolicy is CheckPolicy, skipping the rows of each branch j with
// same[j] >= 0 (same nil: none): they are bit for bit those of an earlier
// branch (findSame), checked before them, so the first error is the
// same.
func checkPolicy(g *tasks.Graph, probs []float64, same []int) error {
	if len(probs) != len(g.Next) {
		return fmt.Errorf("eval: policy has %d probabilities, the graph has %d valid transitions", len(probs), len(g.Next))
	}
	for s := 0; s < len(g.States); s++ {
		if b := g.States[s].Branch; same != nil && b >= 1 && same[b-1] >= 0 && s == g.Branches[b-1].Entry() {
			s = g.Branches[b-1].LeafIn() + 1 // the branch's rows, as findSame compares them
			continue
		}
		row := probs[g.Offsets[s]:g.Offsets[s+1]]
		sum := 0.0
		for _, p := range row {
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("eval: state %s: probability %v outside [0, 1]", g.Name(s), p)
			}
			sum += p
		}
		if math.Abs(sum-1) > 1e-9 {
			return fmt.Errorf("eval: state %s: probabilities sum to %v, want 1", g.Name(s), sum)
		}
	}
	first := probs[g.Offsets[g.Branches[0].ForkIn()]:g.Offsets[g.Branches[0].ForkIn()+1]]
	for _, b := range g.Branches[1:] {
		row := probs[g.Offsets[b.ForkIn()]:g.Offsets[b.ForkIn()+1]]
		for i := range row {
			if math.Abs(row[i]-first[i]) > 1e-12 {
				return fmt.Errorf("eval: fork-incoming state %s: row differs from %s: fork-incoming rows must be identical", g.Name(b.ForkIn()), g.Name(g.Branches[0].ForkIn()))
			}
		}
	}
	return nil
}

// H is the exact expected number of transitions h_x(s) from state s until
// the first state whose head is target t_m.
func (r *Analysis) H(m, s int) float64 {
	g := r.a.g
	if s == 0 {
		return r.PerTarget[m-1]
	}
	if g.States[s].Branch == m {
		return r.a.t[colTime][s] + r.a.t[colReturn][s]*r.ForkTime[m-1]
	}
	return r.a.nt[colTime][s] + r.ForkTime[m-1]
}

// D is the exact expected number of visits d_x(s) to state s before hitting
// target t_m, starting from s0 -> f.
func (r *Analysis) D(m, s int) float64 {
	r.solveVisits()
	g := r.a.g
	if s == 0 {
		return 1
	}
	j := g.States[s].Branch
	if j != m {
		return r.Entries[m-1][j-1] * r.a.ntVisits[s]
	}
	if g.Hits(s, m) {
		return 0
	}
	return r.Entries[m-1][j-1] * r.a.tVisits[s]
}
