package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// stateRow is one state's transition probabilities, by token name.
type stateRow struct {
	State string    `json:"state"`
	Next  []string  `json:"next"`
	Probs []float64 `json:"probs"`
}

// evalReport is what train eval prints, as text or as one JSON object.
type evalReport struct {
	Graph       string    `json:"graph"`
	Policy      string    `json:"policy"`
	States      int       `json:"states"`
	Transitions int       `json:"transitions"`
	HittingTime float64   `json:"hitting_time"`
	PerTarget   []float64 `json:"per_target"`
	// ABCD is a, b, c, d per branch and depth as plain means over every
	// multiedge copy, visited or not; ABCDVisits weights each copy by its
	// expected visits (the paper's, along the policy's own paths), and
	// ABCDVisitsMean pools them over every branch and depth.
	ABCD           []eval.ABCDRow   `json:"abcd"`
	ABCDVisits     []eval.ABCDRow   `json:"abcd_visits"`
	ABCDVisitsMean eval.ABCDRow     `json:"abcd_visits_mean"`
	ABCDMean       eval.ABCDRow     `json:"abcd_mean"` // the per-copy means pooled over branches, then depths (eval.PerCopyMeans)
	Entry          []float64        `json:"entry"`     // pi(f -> u_{i,1,l} | s0 -> f), branch by branch
	Theory         eval.Predictions `json:"theory"`
	MC             *eval.MCResult   `json:"-"`
	// TransitionProbs (-probs) is every state's row of the policy.
	TransitionProbs []stateRow `json:"transition_probs,omitempty"`
	SearchAgent     bool       `json:"search_agent"` // the mc_* keys describe the search agent's rollouts
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval")
	var gf graphFlags
	gf.register(fs, tasks.DefaultConfig())
	policy := fs.String("policy", "pretrained", "policy to analyse: "+strings.Join(eval.PolicyNames, ", "))
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	mc := fs.Int("mc", 0, "also run N Monte Carlo rollouts (0: none; a transformer -checkpoint, measured by Monte Carlo only, takes >= 2, default the run's -eval-rollouts)")
	horizon := fs.Int("horizon", 0, "Monte Carlo horizon in transitions (0: none; a transformer -checkpoint takes >= 1, default the run's)")
	seed := fs.Uint64("seed", 1, "Monte Carlo seed")
	search := fs.Bool("search-agent", false, "with -mc: the rollouts are the Corollary's search agent's (never re-enters a used edge state; each refusal costs a step)")
	ckpt := fs.String("checkpoint", "", "evaluate the model checkpointed in this run folder (its graph and setting come from the checkpoint)")
	showProbs := fs.Bool("probs", false, "also print every state's transition probabilities (a Markov policy's)")
	trainSource := fs.Bool("train-source", false, "the optimum of the setting in which RLVR trains the source row s0 -> f (default: it stays uniform)")
	err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := refuseEmpty(fs, map[string]string{"checkpoint": "a run folder (leave it out to analyse -policy)"}); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *ckpt != "" && (set["W"] || set["K"] || set["L"] || set["branches"] || set["policy"] || set["train-source"]) {
		return usagef("eval: -checkpoint takes its graph, policy and setting from the run folder: drop -W, -K, -L, -branches, -policy and -train-source")
	}
	var cfg tasks.Config // -checkpoint: the run's graph, within this budget
	if *ckpt == "" {
		cfg, err = gf.config(fs)
	} else {
		cfg.MaxBytes, err = resolveBudget(fs, gf.maxBytes)
	}
	if err != nil {
		return err
	}
	if !slices.Contains(eval.PolicyNames, *policy) {
		return usagef("eval: -policy %q: want one of %s", *policy, strings.Join(eval.PolicyNames, ", "))
	}
	if *mc < 0 || *mc == 1 {
		return usagef("eval: -mc %d: want 0 (none) or at least 2 rollouts", *mc)
	}
	if *search && *mc == 0 {
		return usagef("eval: -search-agent needs -mc N (the number of rollouts)")
	}
	if *horizon < 0 {
		return usagef("eval: -horizon %d: want >= 0 (0: no limit)", *horizon)
	}
	var g *tasks.Graph
	var probs []float64
	var steps *evalSteps
	if *ckpt != "" {
		c, err := experiment.Open(*ckpt, cfg.MaxBytes)
		if err != nil {
			return usagef("eval: -checkpoint %s: %v", *ckpt, err)
		}
		defer c.Close()
		if c.Trainer != nil {
			if *showProbs {
				return usagef("eval: -probs: %s holds a transformer, whose probabilities depend on the whole rollout: see train sample %s -probs", *ckpt, *ckpt)
			}
			return evalTransformer(c, agentEval{n: *mc, horizon: *horizon, seed: *seed, search: *search, json: *asJSON, nSet: set["mc"], horizonSet: set["horizon"]}, stdout, stderr)
		}
		g, probs, *trainSource = c.Graph, c.Probs, c.Config.Train.TrainSource
		*policy = "checkpoint " + *ckpt
		if steps, err = planEval(stderr, g.Config, *showProbs); err != nil {
			return err
		}
	} else {
		if steps, err = planEval(stderr, cfg, *showProbs); err != nil {
			return err
		}
		steps.say("building the graph")
		if g, err = tasks.New(cfg); err != nil {
			return err
		}
		if probs, err = eval.Named(g, *policy); err != nil {
			return err
		}
	}
	rep, err := analysePolicy(g, probs, *policy, *trainSource, steps)
	if err != nil {
		return err
	}
	if *showProbs {
		rep.TransitionProbs = transitionRows(g, probs)
	}
	if *mc > 0 && *horizon == 0 && !*search {
		// Without a horizon every rollout runs until it hits: refuse work
		// that would take hours (the SFT limit's 4e14 at the paper's size).
		if work := float64(*mc) * rep.HittingTime; work > 3e9 {
			return usagef("eval: -mc %d without -horizon: about %.3g transitions expected (%d rollouts x exact hitting time %.4g); give -horizon", *mc, work, *mc, rep.HittingTime)
		}
	}
	if *mc > 0 {
		steps.say(fmt.Sprintf("%d Monte Carlo rollouts", *mc))
		sp, err := eval.NewSampler(g, probs)
		if err != nil {
			return err
		}
		res, err := interruptible("Monte Carlo", *mc, func(ctx context.Context) (eval.MCResult, error) {
			if *search {
				return sp.SearchMonteCarlo(ctx, *mc, *horizon, *seed)
			}
			return sp.MonteCarlo(ctx, *mc, *horizon, *seed)
		})
		if err != nil {
			return err
		}
		rep.MC, rep.SearchAgent = &res, *search
	}
	steps.say("writing the report")
	if *asJSON {
		return writeJSON(stdout, rep, rep.MC)
	}
	return writeText(stdout, rep)
}

// analysePolicy runs the exact analysis of a Markov policy on g, saying
// which step it is in (steps nil: nothing said).
func analysePolicy(g *tasks.Graph, probs []float64, name string, trainSource bool, steps *evalSteps) (*evalReport, error) {
	steps.say("solving the hitting times")
	res, err := eval.NewAnalyzer(g).Analyze(probs)
	if err != nil {
		return nil, err
	}
	steps.say("a, b, c, d per copy; the theory (the exact RLVR optimum and its certificate)")
	rep := &evalReport{
		Graph: g.Config.Name(), Policy: name,
		States: g.NumStates(), Transitions: len(g.Next),
		HittingTime: res.HittingTime, PerTarget: res.PerTarget,
		ABCD: eval.ABCDTable(g, probs), Theory: eval.Predict(g, trainSource),
		Entry: append([]float64(nil), probs[g.Offsets[0]:g.Offsets[1]]...),
	}
	steps.say("the visit counts and a, b, c, d weighted by visits")
	rep.ABCDVisits, _, rep.ABCDVisitsMean = res.VisitABCD()
	_, rep.ABCDMean = eval.PerCopyMeans(rep.ABCD)
	return rep, nil
}

// writeJSON prints report as one JSON object with the Monte Carlo keys of
// mc (nil: none) inline; mc_hitting_time and its interval are null when
// fewer than two rollouts hit (no mean length of hits to speak of). The
// bigram's and the transformer's reports share it.
func writeJSON(w io.Writer, report any, mc *eval.MCResult) error {
	obj := map[string]any{}
	parts := []any{report}
	if mc != nil {
		parts = append(parts, mc)
	}
	for _, v := range parts {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
	}
	if mc != nil && mc.Hits < 2 {
		obj["mc_hitting_time"], obj["mc_hitting_time_ci95"] = nil, nil
	}
	return writeIndented(w, obj)
}

// writeIndented prints v as indented JSON.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // token names hold '>'
	return enc.Encode(v)
}

// mcLine prints a Monte Carlo summary: the mean is over the rollouts that
// hit, which is the hitting time only when (nearly) all of them do.
func mcLine(w io.Writer, what string, r *eval.MCResult) {
	if r.Hits < 2 {
		fmt.Fprintf(w, "%s (%d rollouts): %d hit within the horizon, mean length %.6g\n", what, r.N, r.Hits, r.MeanLength)
		return
	}
	fmt.Fprintf(w, "%s (%d rollouts, %d hit): mean length of the hits %.6g ± %.3g (95%%), success rate %.4f\n",
		what, r.N, r.Hits, r.HittingTime, r.CI95, r.SuccessRate)
}

func uniform(p []float64) bool {
	for _, x := range p {
		if math.Abs(x-p[0]) > 1e-12 {
			return false
		}
	}
	return true
}

func writeText(w io.Writer, rep *evalReport) error {
	fmt.Fprintf(w, "graph %s: %d edge states, %d valid transitions\n", rep.Graph, rep.States, rep.Transitions)
	fmt.Fprintf(w, "policy %s: exact hitting time %s\n", rep.Policy, num(rep.HittingTime))
	if rep.MC != nil && rep.SearchAgent {
		mcLine(w, "search agent", rep.MC)
	} else if rep.MC != nil {
		mcLine(w, "Monte Carlo", rep.MC)
	}
	if !uniform(rep.Entry) {
		fmt.Fprintf(w, "entry probabilities from s0 -> f, branch by branch: %s\n", experiment.FormatProbs(rep.Entry))
	}
	writeTheory(w, rep.Theory)
	rows, visits, note := rep.ABCD, rep.ABCDVisits, ""
	if identicalBranches(rows) && identicalBranches(visits) {
		rows, visits, note = rows[:depthOf(rows)], visits[:depthOf(rows)], " (every branch alike: branch 1 shown)"
	}
	fmt.Fprintf(w, "a/b/c/d by depth%s, weighted by visits (the paper's, along the policy's paths), then per copy (a plain mean over every multiedge copy, visited or not):\n", note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "branch\tdepth\ta\tb\tc\td\ta per copy\tb per copy\tc per copy\td per copy\t")
	for i, r := range rows {
		v := visits[i]
		fmt.Fprintf(tw, "%d\t%d\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t\n", r.Branch, r.Depth, v.A, v.B, v.C, v.D, r.A, r.B, r.C, r.D)
	}
	m, c := rep.ABCDVisitsMean, rep.ABCDMean
	fmt.Fprintf(tw, "mean\t\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t\n", m.A, m.B, m.C, m.D, c.A, c.B, c.C, c.D)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.TransitionProbs != nil {
		fmt.Fprintln(w, "transition probabilities, state by state:")
		for _, r := range rep.TransitionProbs {
			parts := make([]string, len(r.Next))
			for i, n := range r.Next {
				parts[i] = fmt.Sprintf("%s %.4g", n, r.Probs[i])
			}
			fmt.Fprintf(w, "  %-16s -> %s\n", r.State, strings.Join(parts, ", "))
		}
	}
	return nil
}

// transitionRows lists every state's row of the policy probs (CSR order).
func transitionRows(g *tasks.Graph, probs []float64) []stateRow {
	out := make([]stateRow, g.NumStates())
	for s := range out {
		r := stateRow{State: g.Name(s), Probs: probs[g.Offsets[s]:g.Offsets[s+1]]}
		for _, n := range g.Row(s) {
			r.Next = append(r.Next, g.Name(n))
		}
		out[s] = r
	}
	return out
}

// writeTheory prints the paper's predictions on the graph and the exact
// optimum of the setting.
func writeTheory(w io.Writer, th eval.Predictions) {
	fmt.Fprintln(w, "theory:")
	if th.H0 > 0 {
		fmt.Fprintf(w, "  %-44s %s\n", "H_0 (pretrained, Appendix B)", num(th.H0))
	}
	fmt.Fprintf(w, "  %-44s %s\n", "sft-limit (Appendix D recursion)", num(th.SFTLimit))
	fmt.Fprintf(w, "  %-44s %s\n", "rlvr-limit (exact, a=b=c=d=1, uniform entry)", num(th.RLVRLimit))
	fmt.Fprintf(w, "  %-44s %s\n", "rlvr-limit leading term 4 sum_i k_i", num(th.RLVRLeading))
	setting := map[bool]string{false: "source row frozen (uniform)", true: "source row trained"}[th.TrainSource]
	fmt.Fprintf(w, "  rlvr optimum, %s: %s (other setting: %s)\n", setting, num(th.RLVROptimum),
		num(map[bool]float64{false: th.RLVROptimumSourceTrained, true: th.RLVROptimumSourceFrozen}[th.TrainSource]))
	first := "uniform"
	if th.FirstBranch > 0 {
		first = fmt.Sprintf("enters branch %d first", th.FirstBranch)
	}
	fmt.Fprintf(w, "    its policy: source %s; entries c_{i,1} %s; every other desired probability 1\n", first, experiment.FormatProbs(th.RLVROptimumEntry))
	if c := th.RLVROptimumCertificate; c != nil {
		fmt.Fprintf(w, "    certificate (exact gradient over every trained logit, relative to H_f): largest |dH/dtheta| %.2g, smallest outward margin %.3g at %s",
			c.Gradient, c.Margin, c.MarginAt)
		if c.FaceVertices > 0 {
			fmt.Fprintf(w, "; %d source vertices, margin %.3g", c.FaceVertices, c.FaceMargin)
		}
		fmt.Fprintf(w, ": %s\n", map[bool]string{true: "holds", false: "FAILS"}[th.Certified])
	}
}

func depthOf(rows []eval.ABCDRow) int {
	n := 0
	for _, r := range rows {
		if r.Branch == 1 {
			n++
		}
	}
	return n
}

func identicalBranches(rows []eval.ABCDRow) bool {
	k := depthOf(rows)
	if k == 0 || len(rows)%k != 0 {
		return false
	}
	for i, r := range rows {
		f := rows[i%k]
		if r.Depth != f.Depth || r.A != f.A || r.B != f.B || r.C != f.C || r.D != f.D {
			return false
		}
	}
	return true
}
