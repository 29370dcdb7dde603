package trainers

import (
	"fmt"
	"math"
	"slices"

	"github.com/rlvr-backtrack/backtrack/nn"
)

// Config configures one training run on a world graph. The fields whose
// good value depends on the trainer and the model (the optimiser, the
// rollouts per step, the baseline) may be left at their zero value: New and
// Resolve fill them from Defaults, so a config file and command-line flags
// resolve alike.
type Config struct {
	// Trainer is the trainer kind (see Kind).
	Trainer Kind           `json:"trainer"`
	Optim   nn.OptimConfig `json:"optimizer"`
	// LRDecay schedules the learning rate: "" (constant), "linear" (from
	// the optimiser's lr down to lr/Steps at the last step) or "plateau"
	// (halved each time the run goes Patience steps without a new best,
	// at most Halvings times; see progress).
	LRDecay string `json:"lr_decay,omitempty"`
	// Halvings (lr_decay plateau) is how many times the learning rate may
	// be halved before a run that still makes no progress stops (stop
	// reason plateau).
	Halvings int `json:"halvings,omitempty"`
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
	MaxTokens int `json:"max_tokens,omitempty"`
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
	Rollouts      int     `json:"rollouts"`
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
	// each sampled token, aggregated the same way. Both fields are unset
	// (0, "") for the other trainers.
	GroupSize int    `json:"group_size,omitempty"`
	LossAgg   string `json:"loss_agg,omitempty"`
	// Baseline is subtracted from each token's return to go: "state-target"
	// (the batch's mean return from the token's state in rollouts with the
	// same target), "state" (from the token's state) or "batch" (the
	// batch's mean return); see tokenAdvantages. "fork" is "state-target"
	// on returns bootstrapped at the fork-incoming states, where the walk
	// renews (see forkReturns). "gae" uses instead GAE
	// with a tabular critic V(state, target) (see critic). "group" is the
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
	// TrainSource trains the source row s0 -> f; by default it stays
	// uniform like the fork-incoming rows (the paper fixes those and treats
	// every state whose head is the fork alike; the source row is the one
	// choice it leaves open). Every trainer and model honours it, and the
	// RLVR trainers converge to the optimum of the setting
	// (eval.Optimum).
	TrainSource bool `json:"train_source"`
}

// Baselines lists the values of Config.Baseline.
var Baselines = []string{"gae", "fork", "state-target", "state", "batch", "group"}

// LRDecays lists the values of Config.LRDecay.
var LRDecays = []string{"", "linear", "plateau"}

// maxHalvings bounds Config.Halvings: 2^-50 of a rate is no rate.
const maxHalvings = 50

// LossAggs lists the values of Config.LossAgg.
var LossAggs = []string{"token", "sequence", "constant"}

// DefaultConfig is the paper's headline run, exact RLVR until within 0.1%
// of its limit, with the trainer- and model-dependent fields unset
// (Resolve fills them: sign descent with lr 0.01 for exact RLVR).
func DefaultConfig() Config {
	return Config{Trainer: RLVRExact, Optim: nn.OptimConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, Steps: 20000, Until: 1e-3, Seed: 1, LogEvery: 10, Patience: 1000,
		Beta: 3e-4, Epochs: 2, Minibatches: 2, Clip: 0.2, Lambda: 0.95, CriticRate: 0.5, NormalizeAdvantages: true}
}

// Defaults are the values of the trainer- and model-dependent fields that
// Resolve fills when they are unset.
type Defaults struct {
	Optim         nn.OptimConfig
	Rollouts      int
	Baseline      string
	HorizonFactor float64
	// GroupSize and LossAgg are set for the group-relative trainers only.
	GroupSize int
	LossAgg   string
}

// defaultsFor returns the defaults of trainer k on model m: the paper's sign
// descent at lr 0.01, 256 rollouts, the state baseline and the paper's
// horizon of twice the hitting time, unless the model registered others
// (each model's file says which and why).
func defaultsFor(k Kind, m Model) Defaults {
	d := Defaults{Optim: nn.DefaultOptimConfig(), Rollouts: 256, Baseline: "state", HorizonFactor: 2}
	if k.Grouped() {
		// TRL's GRPOConfig: num_generations 8; token-level aggregation for
		// grpo and rloo, the constant normaliser for dr-grpo.
		d.Baseline, d.GroupSize, d.LossAgg = "group", 8, "token"
		if k == DrGRPO {
			d.LossAgg = "constant"
		}
	}
	if spec, ok := models[m]; ok && spec.defaults != nil {
		spec.defaults(k, &d)
	}
	return d
}

// Resolve fills the fields left unset (zero optimiser name or learning
// rate, zero rollouts, empty baseline, zero horizon factor) with the defaults of the trainer on
// model m. An optimiser named without a learning rate takes the default
// rate when the default optimiser has that name, and the paper's 0.01
// otherwise.
func (c Config) Resolve(m Model) Config {
	d := defaultsFor(c.Trainer, m)
	switch {
	case c.Optim.Name == "" && c.Optim.LR == 0:
		c.Optim.Name, c.Optim.LR = d.Optim.Name, d.Optim.LR
	case c.Optim.Name == "":
		c.Optim.Name = d.Optim.Name
	case c.Optim.LR == 0 && c.Optim.Name == d.Optim.Name:
		c.Optim.LR = d.Optim.LR
	case c.Optim.LR == 0:
		c.Optim.LR = nn.DefaultOptimConfig().LR
	}
	if c.Rollouts == 0 {
		c.Rollouts = d.Rollouts
	}
	if c.Baseline == "" {
		c.Baseline = d.Baseline
	}
	if c.HorizonFactor == 0 {
		c.HorizonFactor = d.HorizonFactor
	}
	if c.GroupSize == 0 {
		c.GroupSize = d.GroupSize
	}
	if c.LossAgg == "" {
		c.LossAgg = d.LossAgg
	}
	return c
}

// Validate checks every field of a resolved config; errors name the field
// and what is allowed.
func (c Config) Validate() error {
	if !c.Trainer.Valid() {
		return fmt.Errorf("trainers: trainer %q: want one of %s", c.Trainer, KindNames(Kinds))
	}
	if err := c.Optim.Validate(); err != nil {
		return err
	}
	if !slices.Contains(LRDecays, c.LRDecay) {
		return fmt.Errorf("trainers: lr_decay %q: want \"\" (constant), linear or plateau", c.LRDecay)
	}
	if c.Halvings < 0 || c.Halvings > 0 && c.LRDecay != "plateau" || c.Halvings > maxHalvings {
		return fmt.Errorf("trainers: halvings %d: want 0..%d, and 0 unless lr_decay is plateau", c.Halvings, maxHalvings)
	}
	if c.Steps < 1 {
		return fmt.Errorf("trainers: steps %d: want >= 1", c.Steps)
	}
	if !(c.Until >= 0 && c.Until < 1) {
		return fmt.Errorf("trainers: until %v: want a relative distance in [0, 1) (0: run all steps)", c.Until)
	}
	if c.MaxTokens < 0 || c.MaxTokens > 0 && !c.Trainer.Sampled() {
		return fmt.Errorf("trainers: max_tokens %d: want >= 0, and 0 unless the trainer samples (reinforce, ppo, grpo, rloo, dr-grpo)", c.MaxTokens)
	}
	if c.LogEvery < 1 {
		return fmt.Errorf("trainers: log_every %d: want >= 1", c.LogEvery)
	}
	if !(c.SupervisedBackward >= 0 && c.SupervisedBackward <= 1) || math.IsNaN(c.SupervisedBackward) {
		return fmt.Errorf("trainers: supervised_backward %v: want a fraction in [0, 1]", c.SupervisedBackward)
	}
	if c.SupervisedBackward > 0 && !c.Trainer.Supervises() {
		return fmt.Errorf("trainers: supervised_backward %v: only the sft trainer supervises backward states", c.SupervisedBackward)
	}
	if c.Patience < 0 {
		return fmt.Errorf("trainers: patience %d: want >= 0 (0: never stop for lack of progress)", c.Patience)
	}
	if c.Rollouts < 1 {
		return fmt.Errorf("trainers: rollouts %d: want >= 1", c.Rollouts)
	}
	if !(c.Beta >= 0) || math.IsInf(c.Beta, 0) {
		return fmt.Errorf("trainers: beta %v: want a finite length penalty >= 0", c.Beta)
	}
	if !(c.HorizonFactor >= 1) || math.IsInf(c.HorizonFactor, 0) {
		return fmt.Errorf("trainers: horizon_factor %v: want >= 1 (the paper's 2): below 1 the horizon is shorter than the hitting time and cuts most rollouts before their target", c.HorizonFactor)
	}
	if c.Epochs < 1 || c.Minibatches < 1 || c.Minibatches > c.Rollouts {
		return fmt.Errorf("trainers: epochs %d, minibatches %d: want >= 1 each, minibatches <= rollouts (%d)", c.Epochs, c.Minibatches, c.Rollouts)
	}
	if !(c.Clip > 0 && c.Clip < 1) {
		return fmt.Errorf("trainers: clip %v: want in (0, 1)", c.Clip)
	}
	if !(c.KLCoef >= 0) || !(c.EntropyCoef >= 0) || math.IsInf(c.KLCoef, 0) || math.IsInf(c.EntropyCoef, 0) {
		return fmt.Errorf("trainers: kl_coef %v, entropy_coef %v: want finite >= 0", c.KLCoef, c.EntropyCoef)
	}
	if !slices.Contains(Baselines, c.Baseline) {
		return fmt.Errorf("trainers: baseline %q: want gae, fork, state-target, state, batch or group", c.Baseline)
	}
	if err := c.validateGroups(); err != nil {
		return err
	}
	if !(c.Lambda >= 0 && c.Lambda <= 1) || !(c.CriticRate > 0 && c.CriticRate <= 1) {
		return fmt.Errorf("trainers: lambda %v, critic_rate %v: want lambda in [0, 1], critic_rate in (0, 1]", c.Lambda, c.CriticRate)
	}
	if c.DistillTraces < 0 {
		return fmt.Errorf("trainers: distill_traces %d: want >= 0 (0: the teacher's exact distribution)", c.DistillTraces)
	}
	return nil
}

// validateGroups checks the group-relative fields: set, and only, for the
// group-relative trainers.
func (c Config) validateGroups() error {
	if !c.Trainer.Grouped() {
		switch {
		case c.Baseline == "group":
			return fmt.Errorf("trainers: baseline group: only the group-relative trainers (grpo, rloo, dr-grpo) take it; %s takes gae, fork, state-target, state or batch", c.Trainer)
		case c.GroupSize != 0:
			return fmt.Errorf("trainers: group_size %d: only the group-relative trainers (grpo, rloo, dr-grpo) have groups", c.GroupSize)
		case c.LossAgg != "":
			return fmt.Errorf("trainers: loss_agg %q: only the group-relative trainers (grpo, rloo, dr-grpo) take it", c.LossAgg)
		}
		return nil
	}
	if c.Baseline != "group" {
		return fmt.Errorf("trainers: baseline %q: the group-relative trainers' baseline is their group's rewards (group)", c.Baseline)
	}
	if c.GroupSize < 2 || c.Rollouts%c.GroupSize != 0 {
		return fmt.Errorf("trainers: group_size %d: want >= 2 and dividing rollouts (%d)", c.GroupSize, c.Rollouts)
	}
	if !slices.Contains(LossAggs, c.LossAgg) {
		return fmt.Errorf("trainers: loss_agg %q: want token, sequence or constant", c.LossAgg)
	}
	if c.EntropyCoef != 0 {
		return fmt.Errorf("trainers: entropy_coef %v: the group-relative trainers have no entropy bonus (TRL's GRPO has none); want 0", c.EntropyCoef)
	}
	return nil
}
