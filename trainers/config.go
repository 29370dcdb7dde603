package trainers

import (
	"fmt"
	"math"
	"slices"

	"strings"

	"github.com/rlvr-backtrack/backtrack/nn"
)

// Names of the trainers of this package.
var Names = []string{"pretrain", "sft", "rlvr-exact", "distill", "reinforce", "ppo"}

// Config configures one training run of a bigram on a world graph.
type Config struct {
	// Trainer is pretrain (Theorem 1), sft (Theorem 2, Appendix F),
	// rlvr-exact (the exact policy gradient, Lemma 'policygrad') or distill
	// (Theorem 5).
	Trainer string         `json:"trainer"`
	Optim   nn.OptimConfig `json:"optimizer"`
	// LRDecay schedules the learning rate over the Steps: "" (constant) or
	// "linear" (from the optimiser's lr down to lr/Steps at the last step).
	LRDecay string `json:"lr_decay,omitempty"`
	// Steps caps the number of optimiser steps (>= 1).
	Steps int `json:"steps"`
	// Until stops the run once the exact hitting time is within this
	// relative distance of the trainer's limit (see Trainer.Limit), or for
	// pretrain once every state puts less than Until on invalid
	// transitions; 0 runs all Steps.
	Until float64 `json:"until"`
	// Seed seeds every random choice of the run (sampled traces, the
	// supervised backward states).
	Seed uint64 `json:"seed"`
	// LogEvery writes a metrics row every LogEvery steps (>= 1).
	LogEvery int `json:"log_every"`
	// SupervisedBackward (sft) is the fraction p in [0, 1] of backward state
	// types (L_j^-, R_j^- of each branch and depth) whose desired backward
	// move is also supervised (Appendix F, Figure 5 right).
	SupervisedBackward float64 `json:"supervised_backward"`
	// Patience (rlvr-exact) stops a run whose hitting time has not
	// improved for this many steps (0: never). Sign descent with a fixed
	// step can lock into a cycle that the paper's continuous sign flow does
	// not have (W=15, K=30, L=5 at lr 0.01 does); the run then stops with
	// ErrStalled. The cross-entropy trainers are convex and settle at the
	// data's entropy, which is convergence, not a stall.
	Patience int `json:"patience"`
	// Sampled RLVR (reinforce, ppo; the paper's PPO figure): each step
	// samples Rollouts rollouts of the current policy with horizon
	// HorizonFactor times its current hitting time and reward
	// 1{hit} - Beta |y|, then updates from them (PPO: Epochs passes over
	// Minibatches minibatches, ratio clipped at 1 +- Clip, an optional KL
	// penalty to the starting policy and entropy bonus).
	Rollouts      int     `json:"rollouts"`
	Beta          float64 `json:"beta"`
	HorizonFactor float64 `json:"horizon_factor"`
	Epochs        int     `json:"epochs"`
	Minibatches   int     `json:"minibatches"`
	Clip          float64 `json:"clip"`
	KLCoef        float64 `json:"kl_coef"`
	EntropyCoef   float64 `json:"entropy_coef"`
	// Baseline is subtracted from each token's return to go: "state-target"
	// (the batch's mean return from the token's state in rollouts with the
	// same target), "state" (from the token's state) or "batch" (the
	// batch's mean return); see tokenAdvantages. "fork" is "state-target"
	// on returns bootstrapped at the fork-incoming states, where the walk
	// renews (see forkReturns). "gae" uses instead GAE
	// with a tabular critic V(state, target) (see critic).
	Baseline string `json:"baseline"`
	// Lambda and CriticRate configure baseline "gae": GAE's lambda and the
	// rate at which the critic follows each batch's mean returns.
	Lambda     float64 `json:"lambda"`
	CriticRate float64 `json:"critic_rate"`
	// NormalizeAdvantages centres the batch's advantages and divides them by
	// their standard deviation.
	NormalizeAdvantages bool `json:"normalize_advantages"`
	// DistillTraces (distill) is the number of teacher rollouts sampled once
	// as the training set; 0 trains on the teacher's exact distribution.
	DistillTraces int `json:"distill_traces"`
}

// DefaultConfig is the paper's headline run: exact RLVR with sign gradient
// descent, lr 0.01, until within 0.1% of the converged hitting time.
func DefaultConfig() Config {
	return Config{Trainer: "rlvr-exact", Optim: nn.DefaultOptimConfig(), Steps: 20000, Until: 1e-3, Seed: 1, LogEvery: 10, Patience: 1000,
		Rollouts: 256, Beta: 3e-4, HorizonFactor: 2, Epochs: 2, Minibatches: 2, Clip: 0.2, Baseline: "state", Lambda: 0.95, CriticRate: 0.5, NormalizeAdvantages: true}
}

// SampledDefaults sets the optimiser of a reinforce or ppo run to the one
// tuned at W=K=5, L=3 (Adam, lr 0.05 for ppo, 0.1 for reinforce); other
// trainers' configs are returned unchanged.
func SampledDefaults(c Config, trainer string) Config {
	c.Trainer = trainer
	switch trainer {
	case "ppo":
		c.Optim = nn.OptimConfig{Name: "adam", LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	case "reinforce":
		c.Optim = nn.OptimConfig{Name: "adam", LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	}
	return c
}

// TransformerRLVRDefaults is SampledDefaults for the transformer learner:
// Adam at lr 0.003 (0.01 and above diverge: every weight matrix moves by
// about lr per step, and together they move the logits far more than the
// bigram's own lr would), 64 rollouts per step and the fork baseline
// (PPO at W=K=3, L=2 is below the bigram's limit after 40 steps with it,
// 140 with the state baseline).
func TransformerRLVRDefaults(c Config, trainer string) Config {
	c = SampledDefaults(c, trainer)
	if trainer == "ppo" || trainer == "reinforce" {
		c.Optim.LR, c.Rollouts, c.Baseline = 0.003, 64, "fork"
	}
	return c
}

// Validate checks every field; errors name the field and what is allowed.
func (c Config) Validate() error {
	if !slices.Contains(Names, c.Trainer) {
		return fmt.Errorf("trainers: trainer %q: want one of %s", c.Trainer, strings.Join(Names, ", "))
	}
	if err := c.Optim.Validate(); err != nil {
		return err
	}
	if c.LRDecay != "" && c.LRDecay != "linear" {
		return fmt.Errorf("trainers: lr_decay %q: want \"\" (constant) or linear", c.LRDecay)
	}
	if c.Steps < 1 {
		return fmt.Errorf("trainers: steps %d: want >= 1", c.Steps)
	}
	if !(c.Until >= 0 && c.Until < 1) {
		return fmt.Errorf("trainers: until %v: want a relative distance in [0, 1) (0: run all steps)", c.Until)
	}
	if c.LogEvery < 1 {
		return fmt.Errorf("trainers: log_every %d: want >= 1", c.LogEvery)
	}
	if !(c.SupervisedBackward >= 0 && c.SupervisedBackward <= 1) || math.IsNaN(c.SupervisedBackward) {
		return fmt.Errorf("trainers: supervised_backward %v: want a fraction in [0, 1]", c.SupervisedBackward)
	}
	if c.SupervisedBackward > 0 && c.Trainer != "sft" {
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
	if !(c.HorizonFactor > 0) || math.IsInf(c.HorizonFactor, 0) {
		return fmt.Errorf("trainers: horizon_factor %v: want > 0 (the paper's 2)", c.HorizonFactor)
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
	if !slices.Contains([]string{"gae", "fork", "state-target", "state", "batch"}, c.Baseline) {
		return fmt.Errorf("trainers: baseline %q: want gae, fork, state-target, state or batch", c.Baseline)
	}
	if !(c.Lambda >= 0 && c.Lambda <= 1) || !(c.CriticRate > 0 && c.CriticRate <= 1) {
		return fmt.Errorf("trainers: lambda %v, critic_rate %v: want lambda in [0, 1], critic_rate in (0, 1]", c.Lambda, c.CriticRate)
	}
	if c.DistillTraces < 0 {
		return fmt.Errorf("trainers: distill_traces %d: want >= 0 (0: the teacher's exact distribution)", c.DistillTraces)
	}
	return nil
}
