#!/bin/bash
# docs/profile-split.sh BINARY PROFILE: the CPU seconds of each phase of a
# run profiled with `train -cpuprofile PROFILE ...` (docs/speed.md), by
# go tool pprof -focus: a sample counts in the first phase one of whose
# frames matches the phase's pattern, so the phases add up to the total.
# Samples pprof puts in runtime.asyncPreempt keep the interrupted loop's
# frames below it, so they count with it.
set -e
B=$1 P=$2
if [ -z "$P" ]; then echo "usage: $0 BINARY PROFILE" >&2; exit 2; fi
phases=(
  "figures=writePlots|figures\."
  "checkpointing=checkpoints\."
  "logging=experiment\.\(\*folder\)\.write|progressbar"
  "measurement=\(\*Trainer\)\.measure|\(\*Trainer\)\.confirm|fresh|MonteCarlo"
  "sampling=aliasTable|StatesInto|StatesMarkedInto|walkStates|NewSampler|drawBatch|\(\*bigram\)\.rollouts|agentRollout|TransformerSampler|\(\*agent\)\.Next"
  "entropy=entropy"
  "table pass=tableKernel|tableSurrogate|trainTable|accumulateTable|applyTable|TableLogSoftmax|TableClippedSurrogate"
  "windows pass=attentionKernel|unembedKernel|layerNorm|trainWindows|gemmRows"
  "advantages and returns=tokenAdvantages|targetAdvantages|rolloutReturns|forkReturns|returnsToGo|lossDivisors|trainers\.scale|advantages"
  "update=minibatches|update|tapeMachine|exactStep|solvers|clipped|ratios"
)
seconds() { go tool pprof -top -nodecount=1000000 -nodefraction=0 "$@" "$B" "$P" 2>/dev/null | sed -n 's/.*accounting for \([0-9.]*\)\(m\?\)s.*/\1 \2/p' | head -1 | awk '{ if ($2 == "m") print $1/1000; else print $1+0 }'; }
total=$(seconds)
printf '%-24s %10s %7s\n' phase "CPU s" share
ignore=
for ph in "${phases[@]}"; do
  name=${ph%%=*} pat=${ph#*=}
  if [ -n "$ignore" ]; then s=$(seconds -focus "$pat" -ignore "$ignore"); else s=$(seconds -focus "$pat"); fi
  printf '%-24s %10.2f %6.1f%%\n' "$name" "${s:-0}" "$(awk -v a="${s:-0}" -v t="$total" 'BEGIN { print 100*a/t }')"
  ignore="${ignore:+$ignore|}$pat"
done
s=$(seconds -ignore "$ignore")
printf '%-24s %10.2f %6.1f%%\n' other "${s:-0}" "$(awk -v a="${s:-0}" -v t="$total" 'BEGIN { print 100*a/t }')"
printf '%-24s %10.2f\n' total "$total"
