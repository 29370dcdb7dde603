package experiment

import (
	"math"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// Summary is summary.json: written last, its presence marks a complete run.
// Hitting times are null for pretraining, whose dense policy still puts
// mass on invalid transitions; it reports Theorem 1's quantities instead.
type Summary struct {
	Model   trainers.Model `json:"model"`
	Trainer trainers.Kind  `json:"trainer"`
	Graph   string         `json:"graph"`
	Out     string         `json:"-"` // the run folder
	// Hindsight: the run's batches were walks with hindsight targets
	// (config.json's train.hindsight; for the printed table).
	Hindsight bool `json:"-"`
	// NothingToDo is set when Run or Resume found the run finished and
	// left it as it was; Resumed when Run resumed an unfinished run of the
	// same configuration.
	NothingToDo        bool     `json:"-"`
	Resumed            bool     `json:"-"`
	InitialHittingTime *float64 `json:"initial_hitting_time"`
	// FinalHittingTime is the hitting time of the run's last policy, at
	// step FinalStep (= Steps) (trainers.Final): exact for the bigram; for
	// the transformer a Monte Carlo estimate measured afresh after the
	// run stopped, on FinalRollouts rollouts that played no part in any
	// stop decision, with its 95% half-width and the share of them that
	// hit (below 1, the estimate is a lower bound and has no interval).
	FinalHittingTime *float64 `json:"final_hitting_time"`
	FinalStep        int      `json:"final_step"`
	FinalCI95        *float64 `json:"final_hitting_time_ci95,omitempty"`
	FinalSuccessRate *float64 `json:"final_mc_success_rate,omitempty"`
	FinalRollouts    int      `json:"final_mc_rollouts,omitempty"`
	// StopHittingTime (a transformer) is the estimate of the last metrics
	// row, the one the stop rule decided on, with its half-width: beside
	// the final value, not instead of it.
	StopHittingTime *float64 `json:"stop_hitting_time,omitempty"`
	StopCI95        *float64 `json:"stop_hitting_time_ci95,omitempty"`
	// BestHittingTime is the best metrics row's hitting time (the lowest
	// for the RL trainers, the closest to the limit for sft and distill),
	// at step BestStep; for a transformer the second measurement, on
	// fresh rollouts, of the last row whose whole interval beat the best
	// before it (kept when it beat the best too; the first row and the
	// stop rule's confirmation are kept as they are), with its half-width
	// (absent when the best is a lower bound: some of its rollouts
	// missed).
	BestHittingTime *float64 `json:"best_hitting_time"`
	BestStep        int      `json:"best_step"`
	BestCI95        *float64 `json:"best_hitting_time_ci95,omitempty"`
	// BestSource says which of those a Monte Carlo learner's best is:
	// "first row", "confirmation" (the stop rule's) or "second
	// measurement" (trainers.BestSource; absent for a run resumed from a
	// checkpoint that did not record it).
	BestSource trainers.BestSource `json:"best_source,omitempty"`
	// Attention summarises the final transformer's attention along 200 of
	// its rollouts (trainers.AttentionStats).
	Attention        *trainers.AttentionStats `json:"attention,omitempty"`
	LimitHittingTime *float64                 `json:"limit_hitting_time"`
	InvalidMass      *float64                 `json:"final_invalid_mass,omitempty"`
	BoundRatio       *float64                 `json:"max_bound_ratio,omitempty"`
	Converged        bool                     `json:"converged"`
	// StopReason says why the run ended: steps (the cap), tokens (the
	// sampled-token cap, -max-tokens), until (within -until of the
	// limit), or, after -patience steps without a new best (and every
	// halving of -lr-decay plateau), optimum (at the exact optimum of its
	// setting), stationary (at a stationary point above it), stall (exact
	// RLVR, anywhere else; Stalled is set too) or plateau (the other
	// trainers, anywhere else); memory (the next batch of rollouts would
	// not fit max_bytes: the policy diverged).
	// Code names the code that trained the run: the commit of each
	// process that did (experiment.Code; "" when the binary records
	// none, e.g. go build -buildvcs=false), each change once, in order: a
	// run resumed by newer code lists both.
	Code        []string      `json:"code"`
	StopReason  trainers.Stop `json:"stop_reason"`
	Stalled     bool          `json:"stalled"`
	Steps       int           `json:"steps"`
	WallSeconds float64       `json:"wall_seconds"`
	// SampledTokens and TrainedTokens (sampled RLVR) are the transitions
	// sampled and the tokens trained through the whole model, summed over
	// epochs (trainers.Row).
	SampledTokens int `json:"sampled_tokens,omitempty"`
	TrainedTokens int `json:"trained_tokens,omitempty"`
	// FinalABCD is the final mean a, b, c, d weighted by visits (the
	// paper's, along the policy's paths); FinalABCDPerCopy the plain mean
	// over every copy, visited or not. Null where a quantity has no visit.
	FinalABCD        *[4]*float64     `json:"final_mean_abcd"`
	FinalABCDPerCopy *[4]*float64     `json:"final_mean_abcd_per_copy,omitempty"`
	Theory           eval.Predictions `json:"theory"`
}

// finite returns &x, or nil for NaN and infinities (JSON null).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// Value reads an optional number (NaN when absent).
func Value(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
