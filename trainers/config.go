package trainers

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rlvr-backtrack/backtrack/nn/solvers"
)

// Config configures one training run on a world graph. Defaults gives
// every field that applies to a trainer on a model; the fields that do not
// apply to a run (Fields) are never read, and Validate does not check them.
type Config struct {
	// Trainer is the trainer kind (see Kind).
	Trainer Kind           `json:"trainer"`
	Optim   solvers.Config `json:"optimizer"`
	// LRDecay schedules the learning rate: "" (constant), "linear" (from
	// the optimiser's lr down to lr/Steps at the last step) or "plateau"
	// (halved each time the run goes Patience steps without a new best,
	// at most Halvings times; see progress).
	LRDecay string `json:"lr_decay"`
	// Halvings (lr_decay plateau) is how many times the learning rate may
	// be halved before a run that still makes no progress stops (stop
	// reason plateau).
	Halvings int `json:"halvings"`
	// Steps caps the number of optimiser steps (>= 1).
	Steps int `json:"steps"`
	// Until stops the run once the hitting time is within this relative
	// distance of the trainer's limit (see Trainer.Limit), or for pretrain
	// once every state puts less than Until on invalid transitions; 0 runs
	// all Steps.
	Until float64 `json:"until"`
	// MaxTokens (sampled trainers) stops the run once it has sampled at
	// least this many tokens: a budget shared by trainers that sample
	// differently (0: none).
	MaxTokens int `json:"max_tokens"`
	// Seed seeds every random choice of the run (sampled traces, the
	// supervised backward states, rollouts, initial weights).
	Seed uint64 `json:"seed"`
	// LogEvery writes a metrics row every LogEvery steps (>= 1).
	LogEvery int `json:"log_every"`
	// SupervisedBackward (sft) is the fraction p in [0, 1] of backward state
	// types (L_j^-, R_j^- of each branch and depth) whose desired backward
	// move is also supervised (Appendix F, Figure 5 right).
	SupervisedBackward float64 `json:"supervised_backward"`
	// Patience is how many steps a run may go without a new best (see
	// progress: the lowest hitting time for the RL trainers, the closest
	// to the limit for sft and distill, the least invalid mass for
	// pretrain) before it acts (0: never): under lr_decay plateau it
	// halves the rate, and once Halvings are spent, or without that
	// schedule at once, it stops. Where it stops decides the reason: at
	// the exact optimum of the setting (optimum), at a stationary point
	// (stationary), for exact RLVR anywhere else a stall (ErrStalled: sign
	// descent with a fixed step can lock into a cycle that the paper's
	// continuous sign flow does not have, W=15, K=30, L=5 at lr 0.01
	// does), for the other trainers a plateau.
	Patience int `json:"patience"`
	// Sampled RLVR (reinforce, ppo; the paper's PPO figure): each step
	// samples Rollouts rollouts of the current policy with horizon
	// HorizonFactor times its current hitting time and reward
	// 1{hit} - Beta |y|, then updates from them (PPO: Epochs passes over
	// Minibatches minibatches, ratio clipped at 1 +- Clip, an optional KL
	// penalty to the starting policy and entropy bonus). The transformer's
	// cross-entropy trainers also draw Rollouts sequences per step.
	Rollouts int `json:"rollouts"`
	// StepTokens (sampled trainers; 0: off) draws fewer rollouts while the
	// hitting time is long: a step draws about StepTokens / H of them, H
	// the hitting time its horizon is taken from, at most Rollouts and at
	// least what the trainer needs (stepRollouts). Far from the limit a
	// step then samples about StepTokens tokens instead of Rollouts x H.
	StepTokens int `json:"step_tokens"` // at 0 left out of sweep.Identity: runs made before it keep their folders
	// Hindsight (reinforce, ppo; a policy that does not see its target)
	// draws a step's rollouts as walks with hindsight targets
	// (eval.Buffers.Walks): ceil(Rollouts / W) walks from s0 -> f, each
	// until it has reached every leaf or the horizon, each holding one
	// rollout toward every target (its prefix up to the target's leaf).
	// The rollouts have the law of independent ones, so the gradient is
	// unchanged in expectation; a step samples the walks' tokens, about a
	// fifth of W rollouts' at the paper's size. The transformer's default
	// without a prompt; the bigram's default is the paper's independent
	// rollouts.
	Hindsight     bool    `json:"hindsight"` // false left out of sweep.Identity
	Beta          float64 `json:"beta"`
	HorizonFactor float64 `json:"horizon_factor"`
	Epochs        int     `json:"epochs"`
	Minibatches   int     `json:"minibatches"`
	Clip          float64 `json:"clip"`
	KLCoef        float64 `json:"kl_coef"`
	EntropyCoef   float64 `json:"entropy_coef"`
	// GroupSize (grpo, rloo, dr-grpo) is the number of rollouts per group:
	// a group shares one target, drawn per group, and Rollouts is a
	// multiple of it. LossAgg is how a minibatch's per-token losses are
	// aggregated: "token" (summed over its tokens and divided by their
	// number, DAPO's and TRL's "dapo"/"bnpo"), "sequence" (each rollout's
	// mean over its tokens, averaged over rollouts: TRL's "grpo", the
	// original GRPO paper's) or "constant" (summed and divided by the
	// number of rollouts times the step's horizon, a normaliser that does
	// not depend on the lengths: TRL's "dr_grpo"). With KLCoef > 0 the
	// group-relative trainers add the k3 estimate of KL(pi || pi_start) on
	// each sampled token, aggregated the same way. Neither applies to the
	// other trainers (reinforce and ppo aggregate per token).
	GroupSize int    `json:"group_size"`
	LossAgg   string `json:"loss_agg"`
	// Baseline is subtracted from each token's return to go: "state-target"
	// (the batch's mean return from the token's state in rollouts with the
	// same target), "state" (from the token's state) or "batch" (the
	// batch's mean return); see tokenAdvantages. "fork" is "state-target"
	// on returns bootstrapped at the fork-incoming states, where the walk
	// renews (see targetAdvantages). "gae" uses instead GAE
	// with a tabular critic V(state, target) (see critic). "exact" takes
	// each transition's advantage from the exact values of a Markov chain:
	// the bigram's own, the transformer's table B's (see exact.go). "group" is the
	// group-relative trainers' (and only theirs): the rewards of the
	// rollout's group (see groupAdvantages).
	Baseline string `json:"baseline"`
	// Lambda and CriticRate configure baseline "gae": GAE's lambda and the
	// rate at which the critic follows each batch's mean returns.
	Lambda     float64 `json:"lambda"`
	CriticRate float64 `json:"critic_rate"`
	// NormalizeAdvantages centres the batch's advantages and divides them by
	// their standard deviation (reinforce, ppo; the group-relative trainers
	// scale within each group or not at all, by their definition).
	NormalizeAdvantages bool `json:"normalize_advantages"`
	// DistillTraces (distill) is the number of teacher rollouts sampled once
	// as the training set; 0 trains on the teacher's exact distribution.
	DistillTraces int `json:"distill_traces"`
	// TrainSource (the RL trainers and distill) trains the source row
	// s0 -> f; by default it stays uniform like the fork-incoming rows (the
	// paper fixes those and treats every state whose head is the fork
	// alike; the source row is the one choice it leaves open). Both models
	// honour it, and the RLVR trainers converge to the optimum of the
	// setting (eval.Optimum). sft and pretrain do not take it: their data
	// (golden paths, world-model pairs) is uniform over the branch
	// entries, so training the row would only pull it back to uniform.
	TrainSource bool `json:"train_source"`
}

// Baselines lists the values of Config.Baseline.
var Baselines = []string{"gae", "exact", "fork", "state-target", "state", "batch", "group"}

// LRDecays lists the values of Config.LRDecay.
var LRDecays = []string{"", "linear", "plateau"}

// maxHalvings bounds Config.Halvings: 2^-50 of a rate is no rate.
const maxHalvings = 50

// LossAggs lists the values of Config.LossAgg.
var LossAggs = []string{"token", "sequence", "constant"}

// DefaultConfig is the paper's headline run: exact RLVR with sign descent
// at lr 0.01 until within 0.1% of its limit, on the bigram.
func DefaultConfig() Config { return Defaults(RLVRExact, BigramModel) }

// Defaults is trainer k's configuration on model m with every default:
// each field that applies to k on m, for some choice of the optimiser and
// the baseline (Fields), at its default, and every other field zero. The
// package's defaults are the paper's (sign descent at lr 0.01, 256
// rollouts, horizon twice the hitting time, beta 3e-4) and the usual ones
// of the trainers it names (PPO's 2 epochs of 2 minibatches clipped at
// 0.2, TRL's groups of 8); a model overrides some of them (each model's
// file says which and why). Adding a field: the struct, one line here, one
// line in Fields.
func Defaults(k Kind, m Model) Config {
	c := Config{Trainer: k, Optim: solvers.DefaultConfig(), Steps: 20000, Until: 1e-3, Seed: 1, LogEvery: 10, Patience: 1000}
	if k.Sampled() || m == TransformerModel { // the transformer's sft and distill: sequences per step
		c.Rollouts = 256
	}
	if k.Sampled() {
		c.Beta, c.HorizonFactor, c.Baseline = 3e-4, 2, "state"
		// Sampled updates are noisy: within 1% of the optimum (the exact
		// hitting time resolves any distance, the updates' noise does
		// not), and a rate halved after 200 steps without a new best, three
		// times, before the run stops with its best parameters.
		c.Until, c.LRDecay, c.Patience, c.Halvings = 0.01, "plateau", 200, 3
	}
	if ownBaseline(k) {
		c.Lambda, c.CriticRate, c.NormalizeAdvantages = 0.95, 0.5, true
	}
	if k.Clipped() {
		c.Epochs, c.Minibatches, c.Clip = 2, 2, 0.2
	}
	if k.Grouped() {
		// TRL's GRPOConfig: num_generations 8; token-level aggregation for
		// grpo and rloo, the constant normaliser for dr-grpo.
		c.Baseline, c.GroupSize, c.LossAgg = "group", 8, "token"
		if k == DrGRPO {
			c.LossAgg = "constant"
		}
	}
	if spec, ok := models[m]; ok && spec.defaults != nil {
		spec.defaults(k, &c)
	}
	return c
}

// DefaultOptim is the optimiser named name with its defaults for trainer
// k on model m: the trainer's default learning rate when its default
// optimiser has that name, the paper's 0.01 otherwise, and Adam's usual
// constants.
func DefaultOptim(k Kind, m Model, name string) solvers.Config {
	if d := Defaults(k, m).Optim; d.Name == name {
		return d
	}
	o := solvers.DefaultConfig()
	o.Name = name
	return o
}

// Validate checks every field that applies to the run on model m
// (Fields); errors name the field and what is allowed. The others are
// never read: they are not checked.
func (c Config) Validate(m Model) error {
	if !c.Trainer.Valid() {
		return fmt.Errorf("trainers: trainer %q: want one of %s", c.Trainer, KindNames(Kinds))
	}
	if err := c.Optim.Validate(); err != nil {
		return err
	}
	ownBaselines := Baselines[:len(Baselines)-1] // all but group
	for _, f := range []struct {
		key string
		ok  bool
		msg string
	}{
		{"train.lr_decay", slices.Contains(LRDecays, c.LRDecay), fmt.Sprintf("lr_decay %q: want \"\" (constant), linear or plateau", c.LRDecay)},
		{"train.halvings", c.Halvings >= 0 && c.Halvings <= maxHalvings, fmt.Sprintf("halvings %d: want 0..%d", c.Halvings, maxHalvings)},
		{"train.steps", c.Steps >= 1, fmt.Sprintf("steps %d: want >= 1", c.Steps)},
		{"train.until", c.Until >= 0 && c.Until < 1, fmt.Sprintf("until %v: want a relative distance in [0, 1) (0: run all steps)", c.Until)},
		{"train.max_tokens", c.MaxTokens >= 0, fmt.Sprintf("max_tokens %d: want >= 0 (0: no budget)", c.MaxTokens)},
		{"train.log_every", c.LogEvery >= 1, fmt.Sprintf("log_every %d: want >= 1", c.LogEvery)},
		{"train.supervised_backward", c.SupervisedBackward >= 0 && c.SupervisedBackward <= 1, fmt.Sprintf("supervised_backward %v: want a fraction in [0, 1]", c.SupervisedBackward)},
		{"train.patience", c.Patience >= 0, fmt.Sprintf("patience %d: want >= 0 (0: never stop for lack of progress)", c.Patience)},
		{"train.rollouts", c.Rollouts >= 1, fmt.Sprintf("rollouts %d: want >= 1", c.Rollouts)},
		{"train.step_tokens", c.StepTokens >= 0, fmt.Sprintf("step_tokens %d: want >= 0 (0: every step draws -rollouts)", c.StepTokens)},
		{"train.beta", c.Beta >= 0 && !math.IsInf(c.Beta, 0), fmt.Sprintf("beta %v: want a finite length penalty >= 0", c.Beta)},
		{"train.horizon_factor", c.HorizonFactor >= 1 && c.HorizonFactor <= maxHorizonFactor, fmt.Sprintf("horizon_factor %v: want in [1, %g] (the paper's 2): below 1 the horizon is shorter than the hitting time and cuts most rollouts before their target", c.HorizonFactor, float64(maxHorizonFactor))},
		{"train.epochs", c.Epochs >= 1, fmt.Sprintf("epochs %d: want >= 1", c.Epochs)},
		{"train.minibatches", c.Minibatches >= 1 && c.Minibatches <= c.Rollouts, fmt.Sprintf("minibatches %d: want >= 1 and <= rollouts (%d)", c.Minibatches, c.Rollouts)},
		{"train.clip", c.Clip > 0 && c.Clip < 1, fmt.Sprintf("clip %v: want in (0, 1)", c.Clip)},
		{"train.kl_coef", c.KLCoef >= 0 && !math.IsInf(c.KLCoef, 0), fmt.Sprintf("kl_coef %v: want finite >= 0", c.KLCoef)},
		{"train.entropy_coef", c.EntropyCoef >= 0 && !math.IsInf(c.EntropyCoef, 0), fmt.Sprintf("entropy_coef %v: want finite >= 0", c.EntropyCoef)},
		{"train.baseline", !c.Trainer.Grouped() || c.Baseline == "group", fmt.Sprintf("baseline %q: the group-relative trainers' baseline is their group's rewards (group)", c.Baseline)},
		{"train.baseline", c.Trainer.Grouped() || slices.Contains(ownBaselines, c.Baseline), fmt.Sprintf("baseline %q: %s takes %s (group is the group-relative trainers')", c.Baseline, c.Trainer, strings.Join(ownBaselines, ", "))},
		{"train.group_size", c.GroupSize >= 2 && c.Rollouts%c.GroupSize == 0, fmt.Sprintf("group_size %d: want >= 2 and dividing rollouts (%d)", c.GroupSize, c.Rollouts)},
		{"train.loss_agg", slices.Contains(LossAggs, c.LossAgg), fmt.Sprintf("loss_agg %q: want token, sequence or constant", c.LossAgg)},
		{"train.lambda", c.Lambda >= 0 && c.Lambda <= 1, fmt.Sprintf("lambda %v: want in [0, 1]", c.Lambda)},
		{"train.critic_rate", c.CriticRate > 0 && c.CriticRate <= 1, fmt.Sprintf("critic_rate %v: want in (0, 1]", c.CriticRate)},
		{"train.distill_traces", c.DistillTraces >= 0, fmt.Sprintf("distill_traces %d: want >= 0 (0: the teacher's exact distribution)", c.DistillTraces)},
	} {
		if !f.ok && Applies(f.key, Choice{Model: m, Trainer: c.Trainer, Optimizer: c.Optim.Name, Baseline: c.Baseline, LRDecay: c.LRDecay}) {
			return fmt.Errorf("trainers: %s", f.msg)
		}
	}
	return nil
}

// maxHorizonFactor bounds HorizonFactor: the horizon, this times the
// hitting time, must stay an integer.
const maxHorizonFactor = 1e6
