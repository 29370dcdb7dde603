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
// share on the prompt (0 without one).
type AttentionStats struct {
	OffCurrent float64 `json:"attention_off_current"`
	OnPrompt   float64 `json:"attention_on_prompt"`
	Positions  int     `json:"positions"`
}

// Attention samples n rollouts (seeded) of the transformer being trained
// and summarises its attention; an error for other models.
func (t *Trainer) Attention(n int, seed uint64) (AttentionStats, error) {
	l, ok := t.l.(*transformer)
	if !ok {
		return AttentionStats{}, fmt.Errorf("trainers: %w: it is a %s", ErrNoAttention, t.model)
	}
	a := &agent{l: l, s: l.tr.Sampler()}
	var st AttentionStats
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
				st.OffCurrent += 1 - w[len(w)-1]
				if l.opts.Prompt {
					st.OnPrompt += w[0]
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
	return st, nil
}
