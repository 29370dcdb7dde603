// Package sweeps holds the checked-in sweep specs of this folder (train
// sweep SPEC.json), embedded so that train reproduce runs them from any
// working folder.
package sweeps

import _ "embed"

// CompareLearners is compare-learners.json: the bigram and the transformer
// from the same pretrained bigram under PPO, SFT and distillation, 5 seeds,
// at W=K=3, L=2, on the heterogeneous graph 2,2,3;5,1;4,4,4,4 and at
// W=K=5, L=3.
//
//go:embed compare-learners.json
var CompareLearners []byte
