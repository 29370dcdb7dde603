// Package trainers trains the bigram of package nn on the world graphs of
// package tasks: pretraining on world-model pairs (Theorem 1), SFT on golden
// paths with optional supervision of backward states (Theorem 2, Appendix
// F), exact RLVR by the population policy gradient with h_x and d_x from
// package eval (Lemma 'policygrad'), sampled RLVR by REINFORCE and PPO (the
// paper's PPO figure) and distillation of a teacher's traces (Theorem 5).
// Every gradient comes from gorgonia's autodiff of a loss built in the
// model's graph; runs stop on a step cap, on reaching the exact limit, or on
// a stall, and can be snapshotted and resumed bit for bit.
package trainers
