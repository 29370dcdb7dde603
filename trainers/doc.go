// Package trainers trains the models of package nn on the world graphs of
// package tasks, with nine trainers (Kind): pretraining on world-model pairs
// (Theorem 1), SFT on golden paths with optional supervision of backward
// states (Theorem 2, Appendix F), exact RLVR by the population policy
// gradient with h_x and d_x from package eval (Lemma 'policygrad'), sampled
// RLVR by REINFORCE and PPO (the paper's PPO figure) and by the
// group-relative GRPO, RLOO and Dr. GRPO (grpo.go), and distillation of a
// teacher's traces (Theorem 5).
//
// One Trainer runs every trainer on every model: the loop, the seeds, the
// stop rules (Config.Until, Config.Patience) and the checkpointed state
// (Checkpoint, Restore) are model-agnostic, and each model is a learner
// (learner.go) registered from its own files: the bigram (bigram.go,
// bigram_sampled.go, and the dense bigram of pretraining, dense.go) and
// the transformer (transformer*.go). The trainer- and model-dependent
// defaults live in one place (Defaults, with each model's registered
// defaults), and which field applies to which run in another (Fields).
//
// Every gradient comes from gorgonia's autodiff of a loss built in the
// model's graph (ppo.go holds the sampled losses); runs stop on a step cap,
// a sampled-token budget, on reaching the exact limit, or on a stall, and
// resume bit for bit.
package trainers
