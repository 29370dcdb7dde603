package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/runs"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// evalReport is what train eval prints, as text or as one JSON object.
type evalReport struct {
	Graph       string           `json:"graph"`
	Policy      string           `json:"policy"`
	States      int              `json:"states"`
	Transitions int              `json:"transitions"`
	HittingTime float64          `json:"hitting_time"`
	PerTarget   []float64        `json:"per_target"`
	ABCD        []eval.ABCDRow   `json:"abcd"`
	Entry       []float64        `json:"entry"` // pi(f -> u_{i,1,l} | s0 -> f), branch by branch
	Theory      eval.Predictions `json:"theory"`
	MC          *eval.MCResult   `json:"-"`
	SearchAgent bool             `json:"search_agent"` // the mc_* keys describe the search agent's rollouts
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval")
	var gf graphFlags
	gf.register(fs, tasks.DefaultConfig())
	policy := fs.String("policy", "pretrained", "policy to analyse: "+strings.Join(eval.PolicyNames, ", "))
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	mc := fs.Int("mc", 0, "also run N Monte Carlo rollouts (0: none)")
	horizon := fs.Int("horizon", 0, "Monte Carlo horizon in transitions (0: none)")
	seed := fs.Uint64("seed", 1, "Monte Carlo seed")
	search := fs.Bool("search-agent", false, "with -mc: the rollouts are the Corollary's search agent's (never re-enters a used edge state; each refusal costs a step)")
	ckpt := fs.String("checkpoint", "", "evaluate the model checkpointed in this run folder (its graph comes from the checkpoint)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *ckpt != "" && (set["W"] || set["K"] || set["L"] || set["branches"] || set["policy"]) {
		return usagef("eval: -checkpoint takes its graph and policy from the run folder: drop -W, -K, -L, -branches and -policy")
	}
	cfg, err := gf.config(fs)
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
	if *ckpt != "" {
		if g, probs, err = runs.LoadBigram(*ckpt, nil); err != nil {
			return usagef("eval: -checkpoint %s: %v", *ckpt, err)
		}
		*policy = "checkpoint " + *ckpt
	} else {
		if g, err = tasks.New(cfg); err != nil {
			return err
		}
		if probs, err = eval.Named(g, *policy); err != nil {
			return err
		}
	}
	rep, err := analysePolicy(g, probs, *policy)
	if err != nil {
		return err
	}
	if *mc > 0 && *horizon == 0 && !*search {
		// Without a horizon every rollout runs until it hits: refuse work
		// that would take hours (the SFT limit's 4e14 at the paper's size).
		if work := float64(*mc) * rep.HittingTime; work > 3e9 {
			return usagef("eval: -mc %d without -horizon: about %.3g transitions expected (%d rollouts x exact hitting time %.4g); give -horizon", *mc, work, *mc, rep.HittingTime)
		}
	}
	if *mc > 0 {
		sp, err := eval.NewSampler(g, probs)
		if err != nil {
			return err
		}
		var res eval.MCResult
		if *search {
			res, err = sp.SearchMonteCarlo(*mc, *horizon, *seed)
		} else {
			res, err = sp.MonteCarlo(*mc, *horizon, *seed)
		}
		if err != nil {
			return err
		}
		rep.MC, rep.SearchAgent = &res, *search
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	return writeText(stdout, rep)
}

// analysePolicy runs the exact analysis of a Markov policy on g.
func analysePolicy(g *tasks.Graph, probs []float64, name string) (*evalReport, error) {
	res, err := eval.NewAnalyzer(g).Analyze(probs)
	if err != nil {
		return nil, err
	}
	return &evalReport{
		Graph: g.Config.Name(), Policy: name,
		States: g.NumStates(), Transitions: len(g.Next),
		HittingTime: res.HittingTime, PerTarget: res.PerTarget,
		ABCD: eval.ABCDTable(g, probs), Theory: eval.Predict(g),
		Entry: append([]float64(nil), probs[g.Offsets[0]:g.Offsets[1]]...),
	}, nil
}

// writeJSON prints the report as one JSON object, Monte Carlo keys inline.
func writeJSON(w io.Writer, rep *evalReport) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	if r := rep.MC; r != nil {
		mb, _ := json.Marshal(r)
		var m map[string]any
		json.Unmarshal(mb, &m)
		if r.Hits < 2 { // no mean length of hits to speak of
			m["mc_hitting_time"], m["mc_hitting_time_ci95"] = nil, nil
		}
		for k, v := range m {
			obj[k] = v
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(obj)
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
		fmt.Fprintf(w, "entry probabilities from s0 -> f, branch by branch: %s\n", runs.FormatProbs(rep.Entry))
	}
	th := rep.Theory
	fmt.Fprintln(w, "theory:")
	if th.H0 > 0 {
		fmt.Fprintf(w, "  H_0 (pretrained, Appendix B)              %s\n", num(th.H0))
	}
	fmt.Fprintf(w, "  sft-limit (Appendix D recursion)          %s\n", num(th.SFTLimit))
	fmt.Fprintf(w, "  rlvr-limit (exact, uniform entry)         %s\n", num(th.RLVRLimit))
	if th.FirstBranch > 0 {
		fmt.Fprintf(w, "  rlvr optimum (entering branch %d first)    %s\n", th.FirstBranch, num(th.RLVROptimum))
	}
	fmt.Fprintf(w, "  rlvr-limit leading term 4 sum_i k_i       %s\n", num(th.RLVRLeading))
	rows, note := rep.ABCD, ""
	if identicalBranches(rows) {
		rows, note = rows[:depthOf(rows)], " (every branch alike: branch 1 shown)"
	}
	fmt.Fprintf(w, "a/b/c/d by depth%s:\n", note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "branch\tdepth\ta\tb\tc\td\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%.6f\t%.6f\t%.6f\t%.6f\t\n", r.Branch, r.Depth, r.A, r.B, r.C, r.D)
	}
	return tw.Flush()
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
