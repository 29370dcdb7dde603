package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

var num = experiment.FormatNumber

// walksNote says, in the progress line and the closing table, that a run's
// batches are walks with hindsight targets (Config.Train.Hindsight).
const walksNote = "batches of walks with hindsight targets"

// printSummary prints the closing table of a run.
func printSummary(w io.Writer, s experiment.Summary) {
	val := experiment.Value
	if s.Trainer.Dense() {
		fmt.Fprintf(w, "\npretrain on graph %s, %d steps in %.2fs -> %s\n", s.Graph, s.Steps, s.WallSeconds, s.Out)
		fmt.Fprintf(w, "  largest mass on invalid transitions  %.3g\n", val(s.InvalidMass))
		fmt.Fprintf(w, "  largest ratio to Theorem 1's bound   %.3g (<= 1 when the bound holds: Theorem 1's, for gradient descent)\n", val(s.BoundRatio))
		return
	}
	var notes []string
	if s.FinalSuccessRate != nil {
		notes = append(notes, string(s.Model), "Monte Carlo hitting times")
	}
	if s.Hindsight {
		notes = append(notes, walksNote)
	}
	model := ""
	if len(notes) > 0 {
		model = " (" + strings.Join(notes, "; ") + ")"
	}
	fmt.Fprintf(w, "\n%s on graph %s%s, %d steps in %.2fs -> %s\n", s.Trainer, s.Graph, model, s.Steps, s.WallSeconds, s.Out)
	fmt.Fprintf(w, "  %-28s %14s   %s\n", "", "measured", "theory")
	th := "-"
	if s.Theory.H0 > 0 {
		th = num(s.Theory.H0) + " (H_0)"
	}
	fmt.Fprintf(w, "  %-28s %14s   %s\n", "initial hitting time", num(val(s.InitialHittingTime)), th)
	lim := "-"
	if l := val(s.LimitHittingTime); l > 0 {
		lim = fmt.Sprintf("%s (limit; leading term 4 sum k = %s)", num(l), num(s.Theory.RLVRLeading))
		if s.Trainer.Supervises() {
			lim = num(l) + " (SFT limit)"
		}
	}
	fmt.Fprintf(w, "  %-28s %14s   %s\n", "final hitting time", estimate(s.FinalHittingTime, s.FinalCI95, s.FinalSuccessRate), lim)
	if s.FinalRollouts > 0 {
		fmt.Fprintf(w, "  %-28s %14s   measured afresh on %d rollouts that no stop decision saw\n", "", "", s.FinalRollouts)
	}
	if s.FinalStep != s.Steps {
		fmt.Fprintf(w, "  %-28s %14s   the parameters of step %d, the best row: the run ended with them\n", "", "", s.FinalStep)
	}
	if s.StopHittingTime != nil {
		fmt.Fprintf(w, "  %-28s %14s   the estimate of step %d, the row the stop rule decided on\n", "stop estimate", estimate(s.StopHittingTime, s.StopCI95, nil), s.Steps)
	}
	if s.BestHittingTime != nil && (s.BestStep != s.FinalStep || s.StopHittingTime != nil) {
		note := ""
		if s.StopHittingTime != nil {
			switch s.BestSource {
			case trainers.BestFirst:
				note = ", the first row"
			case trainers.BestConfirmation:
				note = ", the stop rule's confirmation on fresh rollouts"
			case trainers.BestRecheck:
				note = ", a second measurement on fresh rollouts of the row that beat the best"
			}
			if s.BestCI95 == nil {
				note = ", a lower bound: some of its rollouts missed"
			}
		}
		fmt.Fprintf(w, "  %-28s %14s   at step %d%s\n", "best row", estimate(s.BestHittingTime, s.BestCI95, nil), s.BestStep, note)
	}
	if s.Trainer.RL() {
		th := s.Theory
		first := ""
		if th.FirstBranch > 0 {
			first = fmt.Sprintf(", entering branch %d first", th.FirstBranch)
		}
		fmt.Fprintf(w, "  %-28s %14s   %s (%s; uniform-entry limit %s)\n", "", "", "the exact optimum of the setting"+first,
			map[bool]string{false: "source row frozen", true: "source row trained"}[th.TrainSource], num(th.RLVRLimit))
	}
	if a := s.FinalABCD; a != nil {
		c := s.FinalABCDPerCopy
		fmt.Fprintf(w, "  %-28s %14s   per copy: %.4f %.4f %.4f %.4f\n", "final mean a, b, c, d",
			fmt.Sprintf("%.4f %.4f %.4f %.4f", val(a[0]), val(a[1]), val(a[2]), val(a[3])), val(c[0]), val(c[1]), val(c[2]), val(c[3]))
	}
	switch s.StopReason {
	case "optimum":
		fmt.Fprintf(w, "  stopped: no further progress at the exact optimum of the setting (within 1e-6)\n")
	case "stationary":
		fmt.Fprintf(w, "  stopped: no further progress at a stationary point (exact gradient ~0) above the optimum\n")
	case "plateau":
		fmt.Fprintf(w, "  stopped: no new best for -patience steps (every halving of the rate spent) above the limit\n")
	case "memory":
		fmt.Fprintf(w, "  stopped: the hitting time grew so far that the next batch of rollouts would not fit the memory budget (-max-bytes): the policy diverged\n")
	}
}

// estimate prints a hitting time with its 95% half-width, or as a lower
// bound with the share of rollouts that hit.
func estimate(h, ci, success *float64) string {
	val := experiment.Value
	out := num(val(h))
	switch {
	case ci != nil:
		out += fmt.Sprintf(" ± %.3g", *ci)
	case success != nil && *success < 1:
		out = fmt.Sprintf(">= %s (%.1f%% hit)", out, 100*(*success))
	}
	return out
}
