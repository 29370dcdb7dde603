package trainers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind names a trainer: what data it learns from and which loss it builds.
// Its methods answer every question the loop, the learners and the command
// ask about a trainer, so no code outside this file compares trainer names.
type Kind string

// The trainers of this package.
const (
	// Pretrain is Theorem 1: cross-entropy on world-model pairs from zero
	// logits over every pair of states (a dense bigram).
	Pretrain Kind = "pretrain"
	// SFT is Theorem 2 (and Appendix F's partial backward supervision):
	// cross-entropy on golden paths.
	SFT Kind = "sft"
	// RLVRExact is the exact population policy gradient of Lemma
	// 'policygrad' (a Markov policy is needed).
	RLVRExact Kind = "rlvr-exact"
	// Distill is Theorem 5: cross-entropy on an RLVR teacher's traces.
	Distill Kind = "distill"
	// Reinforce and PPO are sampled RLVR (the paper's PPO figure).
	Reinforce Kind = "reinforce"
	PPO       Kind = "ppo"
	// GRPO, RLOO and DrGRPO are group-relative sampled RLVR (grpo.go):
	// groups of GroupSize rollouts share a target, each rollout's reward is
	// compared with its group's, and the update is PPO's clipped objective
	// without a critic or per-state baseline.
	GRPO   Kind = "grpo"
	RLOO   Kind = "rloo"
	DrGRPO Kind = "dr-grpo"
)

// Kinds lists every trainer, in the order of the manual.
var Kinds = []Kind{Pretrain, SFT, RLVRExact, Distill, Reinforce, PPO, GRPO, RLOO, DrGRPO}

// KindNames is Kinds as strings joined for messages: "pretrain, sft, ...".
func KindNames(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

// Sampled reports whether the trainer learns from rollouts of the current
// policy (reinforce, ppo and the group-relative trainers): it counts tokens
// and rollouts and has batch statistics.
func (k Kind) Sampled() bool { return k == Reinforce || k == PPO || k.Grouped() }

// Grouped reports whether the trainer's advantages are relative to a group
// of rollouts with the same target (grpo, rloo, dr-grpo).
func (k Kind) Grouped() bool { return k == GRPO || k == RLOO || k == DrGRPO }

// Clipped reports whether the trainer maximises PPO's clipped ratio
// objective over epochs and minibatches (ppo and the group-relative
// trainers); reinforce takes one plain policy-gradient step.
func (k Kind) Clipped() bool { return k == PPO || k.Grouped() }

// RL reports whether the trainer maximises the RLVR objective (exactly or
// from samples); it converges to the RLVR optimum.
func (k Kind) RL() bool { return k == RLVRExact || k.Sampled() }

// CrossEntropy reports whether the trainer minimises a cross-entropy on
// fixed data (pretrain, sft, distill).
func (k Kind) CrossEntropy() bool { return k == Pretrain || k == SFT || k == Distill }

// Dense reports whether the trainer's bigram has a logit for every pair of
// states (pretraining from zero logits) rather than for valid transitions.
func (k Kind) Dense() bool { return k == Pretrain }

// Exact reports whether the trainer needs the exact Markov-chain analysis
// of its policy at every step (exact RLVR), hence a Markov policy.
func (k Kind) Exact() bool { return k == RLVRExact }

// epochs is the number of passes over a sampled batch and of minibatches
// per pass: one each for REINFORCE, cfg.Epochs and cfg.Minibatches for the
// clipped objective.
func (k Kind) epochs(cfg Config) (epochs, minibatches int) {
	if k.Clipped() {
		return cfg.Epochs, cfg.Minibatches
	}
	return 1, 1
}

// UsesTeacher reports whether the trainer needs a teacher policy.
func (k Kind) UsesTeacher() bool { return k == Distill }

// Supervises reports whether the trainer can supervise backward states
// (Appendix F's supervised_backward).
func (k Kind) Supervises() bool { return k == SFT }

// Stalls reports whether a lack of progress is a stall (exact RLVR under
// sign descent can cycle); the cross-entropy trainers settle at the data's
// entropy and the sampled trainers are noisy, so neither is watched.
func (k Kind) Stalls() bool { return k == RLVRExact }

func (k Kind) String() string { return string(k) }

// UnmarshalJSON refuses unknown trainer names, naming the allowed ones.
func (k *Kind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("trainer: want a string, one of %s", KindNames(Kinds))
	}
	if s != "" && !Kind(s).Valid() {
		return fmt.Errorf("trainer %q: want one of %s", s, KindNames(Kinds))
	}
	*k = Kind(s)
	return nil
}

// Set and String make a Kind a flag.Value.
func (k *Kind) Set(s string) error {
	if !Kind(s).Valid() {
		return fmt.Errorf("trainer %q: want one of %s", s, KindNames(Kinds))
	}
	*k = Kind(s)
	return nil
}
