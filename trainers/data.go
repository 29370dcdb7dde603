package trainers

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// The cross-entropy trainers minimise sum_{(s,a)} q(s,a) (-log pi(a|s)) for
// pair weights q over the graph's valid transitions (CSR order); by the
// row-wise lemma of Appendix A the gradient is d_q(s) (pi(a|s) - p_q(a|s)).

// SFTPairs is the population SFT data of Theorem 2 (eq. SFTloss): the
// expected number of times each transition occurs in a golden path, target
// uniform, multiedges uniform. With a fraction p > 0 (Appendix F), a seeded
// random p-fraction of the backward state types (L_j^- and R_j^- of each
// branch and depth) also gets its desired backward move supervised, with
// the weight of one visit per golden path to its branch. It returns the
// weights and the supervised backward states.
func SFTPairs(g *tasks.Graph, p float64, rng *rand.Rand) ([]float64, []int, error) {
	q := make([]float64, len(g.Next))
	w := float64(g.W())
	for t := 1; t <= g.W(); t++ {
		tr, err := g.GoldenTransitions(t)
		if err != nil {
			return nil, nil, err
		}
		for _, x := range tr {
			q[edge(g, x.From, x.To)] += x.Weight / w
		}
	}
	// Backward state types, in a fixed order: branch, depth, R^- then L^-.
	type key struct {
		branch, depth int
		class         tasks.Class
	}
	var types []key
	members := map[key][]int{}
	for s, st := range g.States {
		if st.Class != tasks.RMinus && st.Class != tasks.LMinus {
			continue
		}
		k := key{st.Branch, st.Depth, st.Class}
		if _, ok := members[k]; !ok {
			types = append(types, k)
		}
		members[k] = append(members[k], s)
	}
	n := int(p*float64(len(types)) + 0.5)
	var supervised []int
	for _, i := range rng.Perm(len(types))[:n] {
		states := members[types[i]]
		for _, s := range states {
			supervised = append(supervised, s)
			desired := g.Desired(s)
			for _, a := range desired {
				q[edge(g, s, a)] += 1 / (w * float64(len(states)) * float64(len(desired)))
			}
		}
	}
	return q, supervised, nil
}

// TeacherPairs is the exact distillation data of Theorem 5: the expected
// number of times each transition occurs in a trace of the teacher (a
// Markov policy), target uniform: E_x[d_x(s)] pi_T(a|s).
func TeacherPairs(g *tasks.Graph, teacher []float64) ([]float64, error) {
	r, err := eval.NewAnalyzer(g).Analyze(teacher)
	if err != nil {
		return nil, fmt.Errorf("trainers: teacher: %w", err)
	}
	q := make([]float64, len(g.Next))
	for s := range g.States {
		d := 0.0
		for m := 1; m <= g.W(); m++ {
			d += r.D(m, s)
		}
		d /= float64(g.W())
		for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
			q[i] = d * teacher[i]
		}
	}
	return q, nil
}

// SampledTeacherPairs draws n teacher traces (uniform targets, verifier
// stopping at the target) and returns the transition counts divided by n:
// the empirical distillation data.
func SampledTeacherPairs(g *tasks.Graph, teacher []float64, n int, rng *rand.Rand) ([]float64, error) {
	sp, err := eval.NewSampler(g, teacher)
	if err != nil {
		return nil, fmt.Errorf("trainers: teacher: %w", err)
	}
	q := make([]float64, len(g.Next))
	for range n {
		t := 1 + rng.IntN(g.W())
		s := 0
		for {
			a := sp.Step(s, rng.Float64())
			q[edge(g, s, a)]++
			if g.Hits(a, t) {
				break
			}
			s = a
		}
	}
	for i := range q {
		q[i] /= float64(n)
	}
	return q, nil
}

// edge is the CSR index of transition s -> a, which must be valid.
func edge(g *tasks.Graph, s, a int) int {
	e := support(g).Entry(s, a)
	if e < 0 {
		panic(fmt.Sprintf("trainers: %s -> %s is not a valid transition", g.Name(s), g.Name(a)))
	}
	return e
}

// teacherTraces samples n traces of a Markov teacher, seeded.
func teacherTraces(ctx context.Context, g *tasks.Graph, teacher []float64, n, horizon int, seed uint64) (*eval.AgentBatch, error) {
	b, err := eval.AgentRollouts(ctx, g, func() (eval.Agent, error) { return eval.NewMarkovAgent(g, teacher) }, n, horizon, seed^0x510e527fade682d1)
	if err != nil {
		return nil, fmt.Errorf("trainers: teacher traces: %w", err)
	}
	for i, hit := range b.Hit {
		if !hit {
			return nil, fmt.Errorf("trainers: teacher trace %d did not reach its target within %d transitions", i, horizon)
		}
	}
	return b, nil
}
