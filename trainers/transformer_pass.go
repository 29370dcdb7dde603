package trainers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// items are what a pass's loss is built over: the log-probabilities of N
// positions' taken tokens and of their R slots each, as
// nn.TransformerBatch (the windows pass) and nn.TableBatch (the table
// pass) lay them out.
type items interface {
	Positions() (n, r int) // the shapes of Taken and LogProbs
	Taken() *G.Node        // (N); a table pass's is nil when surrogateOnly
	LogProbs() *G.Node     // (N*R); a table pass's is nil when surrogateOnly
	// SlotEntries is the support entry of each slot of the last fill, -1
	// for a masked one.
	SlotEntries() []int
}

// tableSurrogate is the table pass's items (nn.TableBatch): PPO's clipped
// surrogate of their taken tokens as one op.
type tableSurrogate interface {
	ClippedSurrogate(oldLogp, advPos, advNeg *G.Node, eps float64) (*G.Node, error)
}

// surrogateOnly reports whether cfg's loss is PPO's clipped surrogate
// without a KL or entropy term: over the table pass's items it is then
// one op (tableSurrogate), and their slots are not built (newPasses).
func surrogateOnly(cfg Config) bool {
	return cfg.Trainer.Clipped() && cfg.KLCoef == 0 && cfg.EntropyCoef == 0
}

// pass is one of a transformer's two training graphs (newPasses): its
// items, the trainer's loss over them, the loss's constants and the Step
// that differentiates the loss by autodiff and updates the pass's
// parameters with its solver group.
type pass struct {
	cfg   Config // the trainer whose loss the pass holds
	ops   nn.Ops // of the loss's clipped surrogate
	items items
	n, r  int // positions and slots per position of a fill
	in    lossInputs
	step  *nn.Step
	sum   float64 // the loss summed over the fills since the last update
	loss  float64 // the loss of the last update, summed over its fills
}

// lossInputs are the constants of a loss over a pass's items, refilled
// before each run of its graph; nodes the trainer's loss does not use are
// nil.
type lossInputs struct {
	w                      vec // (N) cross-entropy and REINFORCE weights
	advPos, advNeg, oldLog vec // (N) the clipped objective's
	// (N*R) the KL and entropy terms' slot weights and reference
	// log-probabilities; (N) for the group-relative trainers' k3.
	share, refLog vec
}

// all lists the constants.
func (in *lossInputs) all() []vec {
	return []vec{in.w, in.advPos, in.advNeg, in.oldLog, in.share, in.refLog}
}

// newPass builds the trainer's loss over it in graph g (its items' graph),
// of ops o, and its step on learnables with solver.
func newPass(cfg Config, o nn.Ops, it items, g *G.ExprGraph, learnables G.Nodes, solver G.Solver) (*pass, error) {
	p := &pass{cfg: cfg, ops: o, items: it}
	p.n, p.r = it.Positions()
	cost, err := p.lossOf(g)
	if err != nil {
		return nil, err
	}
	if p.step, err = nn.NewStep(cost, learnables, solver); err != nil {
		return nil, err
	}
	return p, nil
}

// lossOf adds the trainer's loss over the pass's items to g: the same
// losses as the bigram's (ppo.go), over tokens instead of transitions:
// the cross-entropy's weighted log-likelihood, REINFORCE's, or PPO's
// clipped surrogate with its optional KL and entropy terms.
func (p *pass) lossOf(g *G.ExprGraph) (*G.Node, error) {
	cfg, n, r := p.cfg, p.n, p.r
	in := &p.in
	if !cfg.Trainer.Clipped() {
		in.w = newVec(g, n, "token_weights")
		return reinforceLoss(p.items.Taken(), in.w.node) // sum_t w_t log pi(a_t)
	}
	var surrogate func(oldLogp, advPos, advNeg *G.Node) (*G.Node, error)
	if ts, ok := p.items.(tableSurrogate); ok && surrogateOnly(cfg) {
		surrogate = func(oldLogp, advPos, advNeg *G.Node) (*G.Node, error) {
			return ts.ClippedSurrogate(oldLogp, advPos, advNeg, cfg.Clip)
		}
	} else {
		surrogate = clippedOf(p.items.Taken(), cfg.Clip, p.ops)
	}
	cost, advPos, advNeg, oldLog, err := clippedLoss(g, n, surrogate)
	if err != nil {
		return nil, err
	}
	in.advPos, in.advNeg, in.oldLog = advPos, advNeg, oldLog
	if surrogateOnly(cfg) {
		return cost, nil
	}
	if cfg.Trainer.Grouped() { // k3 on each position's sampled token
		in.share, in.refLog = newVec(g, n, "token_share"), newVec(g, n, "logp_ref")
		return addRegularizers(cost, p.items.Taken(), in.refLog.node, in.share.node, cfg)
	}
	in.share, in.refLog = newVec(g, n*r, "slot_share"), newVec(g, n*r, "logp_ref")
	return addRegularizers(cost, p.items.LogProbs(), in.refLog.node, in.share.node, cfg)
}

// consts are a pass's loss constants as slices (nil for the loss's unused
// ones), for one fill, and the fill's slot entries when the loss needs
// them (the KL and entropy terms over slots).
type consts struct {
	w, advPos, advNeg, oldLog, share, refLog []float64
	entries                                  []int
	r                                        int // slots per position
}

// begin zeroes the constants for a fill whose layout is set and returns
// them.
func (p *pass) begin() *consts {
	c := &consts{r: p.r}
	for _, f := range []struct {
		v   vec
		dst *[]float64
	}{{p.in.w, &c.w}, {p.in.advPos, &c.advPos}, {p.in.advNeg, &c.advNeg}, {p.in.oldLog, &c.oldLog}, {p.in.share, &c.share}, {p.in.refLog, &c.refLog}} {
		if f.v.node != nil {
			*f.dst = f.v.data()
			clear(*f.dst)
		}
	}
	if p.in.share.node != nil && !p.cfg.Trainer.Grouped() {
		c.entries = p.items.SlotEntries()
	}
	return c
}

// accumulate runs the pass's graph on the current fill (its constants
// set) and adds the gradient to the step's sum.
func (p *pass) accumulate() (float64, error) {
	for _, v := range p.in.all() {
		if v.node == nil {
			continue
		}
		if err := G.Let(v.node, v.val); err != nil {
			return 0, err
		}
	}
	cost, err := p.step.Accumulate() // refuses NaN losses and gradients
	p.sum += cost
	return cost, err
}

// apply updates the pass's parameters from the summed gradient (the
// step's Applied) and keeps the summed loss (loss).
func (p *pass) apply() error {
	p.loss, p.sum = p.sum, 0
	return p.step.Apply()
}

// setCrossEntropy sets the constants of position pos for the cross-entropy
// over n tokens (sft, distill), weighted by weight.
func (c *consts) setCrossEntropy(pos int, n, weight float64) { c.w[pos] = -weight / n }

// setSampled sets the constants of position pos from the batch's token item,
// of rollout r, for the trainer's sampled loss, its terms weighted by
// weight (the inverse sampling rate of a subsample) and divided by div[r]
// (lossDivs.rollout): REINFORCE's weight -A/div, or the clipped
// objective's advantage, the token's log-probability at sampling (oldLog)
// and, with KL or
// entropy terms, its slots' shares and reference log-probabilities
// (PPO's). Distinct positions may be set on several goroutines.
func (l *transformer) setSampled(c *consts, pos, r, item int, weight, oldLog float64, ab *eval.AgentBatch, adv, div []float64) {
	if c.w != nil {
		c.w[pos] = -adv[item] * weight / div[r]
		return
	}
	c.oldLog[pos] = oldLog
	if a := adv[item] * weight / div[r]; a > 0 {
		c.advPos[pos] = a
	} else {
		c.advNeg[pos] = a
	}
	switch {
	case c.share == nil:
	case c.entries == nil: // the group-relative trainers' k3 on the sampled token
		c.share[pos] = weight / div[r]
		c.refLog[pos] = math.Log(l.ref[ab.Entries[item]])
	default:
		for k, e := range c.entries[pos*c.r : (pos+1)*c.r] {
			if e >= 0 {
				c.share[pos*c.r+k] = weight / div[r]
				c.refLog[pos*c.r+k] = math.Log(l.ref[e])
			}
		}
	}
}

// setSummed is setSampled for a token of a walk with hindsight targets
// whose terms over the walk's rollouts are summed (walkSums, entry j):
// the clipped objective's A+ and A- are the sums' positive and negative
// parts, so the loss is that of the rollouts one by one; REINFORCE's
// weight is their sum.
func (l *transformer) setSummed(c *consts, pos, item int, weight, oldLog float64, ab *eval.AgentBatch, sm *walkSums, j int) {
	if c.w != nil {
		c.w[pos] = -(sm.pos[j] + sm.neg[j]) * weight
		return
	}
	c.oldLog[pos] = oldLog
	c.advPos[pos], c.advNeg[pos] = sm.pos[j]*weight, sm.neg[j]*weight
	switch {
	case c.share == nil:
	case c.entries == nil:
		c.share[pos] = weight * sm.share[j]
		c.refLog[pos] = math.Log(l.ref[ab.Entries[item]])
	default:
		for k, e := range c.entries[pos*c.r : (pos+1)*c.r] {
			if e >= 0 {
				c.share[pos*c.r+k] = weight * sm.share[j]
				c.refLog[pos*c.r+k] = math.Log(l.ref[e])
			}
		}
	}
}

// batchTokens is a sampled batch as the passes read it token by token:
// its entries, states and each token's log-probability at sampling.
type batchTokens struct {
	ab       *eval.AgentBatch
	g        *tasks.Graph
	states   []int32
	rowStart []int32 // where each token's row starts in its rollout's ab.Rows (nil without rows)
}

// batchTokens is the batch ab with its states, and its rows' starts when
// the agents reported rows.
func (l *transformer) batchTokens(ab *eval.AgentBatch, states []int32) *batchTokens {
	bt := &batchTokens{ab: ab, g: l.t.g, states: states}
	if ab.Rows != nil {
		bt.rowStart = l.rowStarts(ab, states)
	}
	return bt
}

// logp is the log-probability at sampling of token t, of rollout r: the
// batch's, or with rows, its row's value at its entry (a token at a fixed
// row has none: the passes read only trained ones).
func (bt *batchTokens) logp(r, t int) float64 {
	if bt.ab.LogProbs != nil {
		return bt.ab.LogProbs[t]
	}
	return bt.ab.RowLogProb(bt.g, r, t, int(bt.rowStart[t]), int(bt.states[t]))
}

// checkFinite refuses parameters that an update made NaN or infinite.
func checkFinite(done int, ps G.Nodes) error {
	for _, p := range ps {
		for i, v := range p.Value().Data().([]float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("trainers: step %d: parameter %s[%d] is %v after the update", done, p.Name(), i, v)
			}
		}
	}
	return nil
}
