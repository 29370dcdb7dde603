package trainers

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// ErrNoAttention is Attention's error for a model without attention.
var ErrNoAttention = errors.New("the model has no attention")

// AttentionStats summarise where a transformer's attention goes along its
// own rollouts, averaged over the positions of trained states and over
// heads: the share that leaves the current token (the bigram
// initialisation's attention adds nothing, whatever its weights) and the
// share on the prompt (0 without one). ByDistance[q][d] is the mean weight
// a query at position q of the rollout (s0 -> f is position 0; the last
// row, q = Context-1, pools every position whose window is full) puts on
// the token d positions back (d = 0: the current token), and
// PromptByPosition[q] the mean weight on the prompt (nil without one);
// Counts[q] is the number of positions behind row q (0: the row is zeros).
type AttentionStats struct {
	OffCurrent       float64     `json:"attention_off_current"`
	OnPrompt         float64     `json:"attention_on_prompt"`
	Positions        int         `json:"positions"`
	ByDistance       [][]float64 `json:"by_distance"`
	PromptByPosition []float64   `json:"prompt_by_position,omitempty"`
	Counts           []int       `json:"positions_by_position"`
}

// Attention samples n rollouts (seeded) of the transformer being trained
// and summarises its attention; an error for other models.
func (t *Trainer) Attention(n int, seed uint64) (AttentionStats, error) {
	l, ok := t.l.(*transformer)
	if !ok {
		return AttentionStats{}, fmt.Errorf("trainers: %w: it is a %s", ErrNoAttention, t.model)
	}
	a := &agent{l: l, s: l.tr.Sampler()}
	c := l.opts.Context
	st := AttentionStats{ByDistance: make([][]float64, c), Counts: make([]int, c)}
	for q := range st.ByDistance {
		st.ByDistance[q] = make([]float64, q+1)
	}
	lead := 0
	if l.opts.Prompt {
		lead, st.PromptByPosition = 1, make([]float64, c)
	}
	for i := range n {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		target := 1 + rng.IntN(t.g.W())
		if err := a.Start(target); err != nil {
			return st, err
		}
		for s, steps := 0, 0; !t.g.Hits(s, target) && steps < l.mcCap; steps++ {
			e, _, err := a.Next(s, rng)
			if err != nil {
				return st, err
			}
			if t.trained[s] {
				w := a.s.Attention()
				rows := len(w) - lead
				q := rows - 1 // min(position, Context-1)
				for k, x := range w[lead:] {
					st.ByDistance[q][rows-1-k] += x
				}
				st.Counts[q]++
				st.OffCurrent += 1 - w[len(w)-1]
				if lead > 0 {
					st.OnPrompt += w[0]
					st.PromptByPosition[q] += w[0]
				}
				st.Positions++
			}
			s = t.g.Next[e]
		}
	}
	if st.Positions > 0 {
		st.OffCurrent /= float64(st.Positions)
		st.OnPrompt /= float64(st.Positions)
	}
	for q, k := range st.Counts {
		if k == 0 {
			continue
		}
		for d := range st.ByDistance[q] {
			st.ByDistance[q][d] /= float64(k)
		}
		if lead > 0 {
			st.PromptByPosition[q] /= float64(k)
		}
	}
	return st, nil
}
