#!/bin/bash
# docs/profile-split.sh BINARY PROFILE: the CPU seconds of each phase of a
# run profiled with `train -cpuprofile PROFILE ...` (docs/speed.md), by
# go tool pprof -focus: a sample counts in the first phase whose pattern
# one of its frames matches. Samples pprof puts in runtime.asyncPreempt
# keep the interrupted loop's frames below it, so they count with it.
B=$1; P=$2
declare -a names pats
names=(figures checkpointing logging measurement sampling "advantages and returns" "update (gorgonia graph, optimiser)" entropy)
pats=('writePlots|figures\.' 'checkpoints\.|\(\*Trainer\)\.Checkpoint|saveCheckpoint' 'experiment\.\(\*folder\)\.write|metricsWriter|progressbar' '\(\*Trainer\)\.measure|\(\*Trainer\)\.confirm|fresh|MonteCarlo' 'aliasTable|StatesInto|NewSampler|drawBatch|\(\*bigram\)\.rollouts|sampler|Sample' 'tokenAdvantages|forkReturns|returnsToGo|lossDivisors|trainers\.scale|advantages' 'minibatches|\(\*bigram\)\.update|tapeMachine|exactStep|Adam|solvers|windows|table|Table' 'entropy')
total=$(go tool pprof -top $B $P 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*\)s.*/\1/p')
ign=''
for i in "${!names[@]}"; do
  f=${pats[$i]}
  if [ -n "$ign" ]; then args=(-focus "$f" -ignore "$ign"); else args=(-focus "$f"); fi
  v=$(go tool pprof -top "${args[@]}" $B $P 2>/dev/null | sed -n 's/.*accounting for \([0-9.]*m\?s\).*/\1/p' | head -1)
  echo "${names[$i]}: $v of ${total}s"
  ign="${ign:+$ign|}$f"
done
v=$(go tool pprof -top -ignore "$ign" $B $P 2>/dev/null | sed -n 's/.*accounting for \([0-9.]*m\?s\).*/\1/p' | head -1); echo "other: $v"
