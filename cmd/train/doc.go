// Command train reproduces and extends "Provable Benefits of RLVR over SFT
// for Reasoning Models: Learning to Backtrack Efficiently".
//
// Usage:
//
//	train                      run the paper's headline experiment
//	train eval [flags]         exact analysis of a policy
//	train help                 this manual
//
// See the manual constant below (printed by train help) for every flag.
package main

const manual = `train: exact autodiff trainer for the RLVR-vs-SFT backtracking paper.

usage:
  train                  run the paper's headline experiment (W=K=L... see README)
  train eval [flags]     exact Markov-chain analysis of a policy
  train help             this text

train eval flags:
  -W, -K, -L int         graph shape (default 15, 15, 5)
  -branches SPEC         heterogeneous graph, e.g. "2,2,3;5,1;4,4,4,4"
                         (';' separates branches, ',' the diamonds' multiedge counts)
  -policy NAME           pretrained | sft-limit | rlvr-limit (default pretrained)
  -json                  print one JSON object: hitting_time, per_target, abcd,
                         theory, states (and mc_* keys with -mc)
  -mc N                  also run N seeded Monte Carlo rollouts
  -horizon H             Monte Carlo horizon in transitions (0: none)
  -seed S                Monte Carlo seed (default 1)

examples:
  train eval -policy sft-limit -W 15 -K 15 -L 5
  train eval -branches "2,2,3;5,1;4,4,4,4" -policy rlvr-limit -json
  train eval -W 3 -K 2 -L 2 -mc 100000
`
