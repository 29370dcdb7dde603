// Package reproduce regenerates every result of the paper: each entry
// trains or analyses what the paper claims (through package experiment and
// eval), writes its CSV data and PNG figures in a folder of its own, and
// adds a row to results.md: the claim, what the paper states, what was
// measured, the agreement and the time.
package reproduce

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/sweep"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Result is one row of results.md.
type Result struct {
	Entry, Claim, Paper, Measured string
	Agrees                        string // "yes", "no" or "imprecise" (paper's statement off, the effect holds)
	Seconds                       float64
	Quick                         bool // run at reduced sizes (-quick)
	// Code counts the runs behind the row by the code that made them
	// (codeKey); empty for a row read back from results.md.
	Code map[string]int
}

// entry is one result of the paper that train reproduce regenerates.
type entry struct {
	name, claim, paper string
	run                func(r *reproducer, dir string) (measured, agrees string, err error)
}

// reproducer runs entries into one folder.
type reproducer struct {
	ctx   context.Context
	out   string
	quick bool
	log   io.Writer
	code  map[string]int // the current entry's runs by their code (saw)
}

// entries lists every result of the paper, in the order of the paper.
var entries = []entry{
	{"fig3-4", "exact RLVR from the pretrained bigram converges to the backtracking policy (Figures 3-4)",
		"W=K=15, L=5: from H_0 to 4WK = 900; a, b, c, d -> 1", (*reproducer).fig34},
	{"thm1-pretrain", "pretraining from zero logits learns the world model's mask (Theorem 1)",
		"1 - p_s(t) <= n_s/(m_s + t) under gradient flow", (*reproducer).thm1},
	{"thm2-sft", "SFT on golden paths: a, c -> 1, b, d untouched (Theorem 2)",
		"b_j = L/(L+1), d_j = 1/(L+1) for all time", (*reproducer).thm2},
	{"thm4-separation", "SFT's hitting time is exponential in K, RLVR's linear (Theorem 4)",
		"Theta(W L^K) vs Theta(W K)", (*reproducer).thm4},
	{"corollary-search", "with a search agent, SFT needs Theta(W K L), RLVR Theta(W K) (Corollary)",
		"Theta(W K L) vs Theta(W K)", (*reproducer).corollary},
	{"thm5-distill", "SFT on an RLVR teacher's traces learns backtracking (Theorem 5)",
		"Theta(W K) hitting time", (*reproducer).thm5},
	{"fig5-sft-scaling", "SFT's log hitting time grows linearly in K for every L (Figure 5, left)",
		"W = 6, L = 1..5: straight lines in log scale", (*reproducer).fig5Scaling},
	{"fig5-partial", "supervising a fraction p of backward states lowers SFT's hitting time (Figure 5, right)",
		"W = K = 6, 100 draws per p: decreasing in p", (*reproducer).fig5Partial},
	{"fig6-ppo", "PPO on rollouts (horizon 2 H, beta = 3e-4) converges to the backtracking policy (PPO figure)",
		"W=K=15, L=5: converges to 4WK (within 5% here)", (*reproducer).fig6},
	{"fig7-transformer", "a one-layer transformer initialised to the bigram learns to backtrack (transformer figure)",
		"reaches 4WK, slightly below", (*reproducer).fig7},
	{"fig8-hetero", "RLVR on a heterogeneous graph converges to the backtracking policy (heterogeneous figure)",
		"hitting time 4 sum_i k_i", (*reproducer).fig8},
	{compareLearners, "the transformer learns to backtrack like the bigram under PPO, from the same bigram, over seeds and sizes (a study beyond the paper; not in all)",
		"-", (*reproducer).compareLearners},
	{rlvrAlgorithms, "exact RLVR, REINFORCE, PPO (state and fork baselines), GRPO, RLOO and Dr. GRPO all reach the RLVR limit on the bigram with the same sampled-token budget (a study beyond the paper; not in all)",
		"-", (*reproducer).rlvrAlgos},
	{defaultsStudy, "every default rate (and the bigram's baseline, the transformer's table rate) is the best of a grid of three over 3 seeds, at W=K=5, L=3 and for the sampled trainers at the paper's size (a study beyond the paper; not in all)",
		"-", (*reproducer).defaults},
}

// studies are the entries beyond the paper, run by name only.
var studies = []string{compareLearners, rlvrAlgorithms, defaultsStudy}

// Options configure a reproduction.
type Options struct {
	Out   string // folder for every entry's data, figures and results.md
	Quick bool   // every entry at a reduced size (a smoke test)
	// Docs, when set, is the documentation folder (docs/ of the
	// repository): each entry's figures are copied there under the names
	// the README shows (docFigures), and results.md too once every entry
	// has run (at the paper's sizes only).
	Docs string
	// Command is the command line that runs the reproduction, for the
	// stamp of the pages it writes (Stamp; "": train reproduce and the
	// names).
	Command string
	// Started and Finished are called around each entry (nil: none).
	Started  func(i, n int, name string)
	Finished func(i, n int, r Result)
	// Log receives the progress lines of long entries (nil: none).
	Log io.Writer
}

// Names lists the entries of the paper, in its order: what all runs.
// Studies beyond the paper (compare-learners) are run by name only.
func Names() []string {
	var all []string
	for _, e := range entries {
		if !slices.Contains(studies, e.name) {
			all = append(all, e.name)
		}
	}
	return all
}

// Check resolves entry names: "all" is every entry of the paper (studies
// such as compare-learners are run by name), "transformer" is
// fig7-transformer; an empty list or an unknown name is an error.
func Check(names []string) ([]string, error) {
	all := Names()
	if len(names) == 0 {
		return nil, fmt.Errorf("name the entries to run, or all: %s", strings.Join(all, ", "))
	}
	if len(names) == 1 && names[0] == "all" {
		return all, nil
	}
	if i := slices.Index(names, "all"); i >= 0 {
		others := slices.Delete(slices.Clone(names), i, i+1)
		return nil, fmt.Errorf("all is every entry and takes no others: give all alone, or drop it and keep %s", strings.Join(others, " "))
	}
	all = append(all, studies...)
	out := make([]string, len(names))
	for i, n := range names {
		if n == "transformer" { // the name the transformer issue asked for
			n = "fig7-transformer"
		}
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("unknown entry %q: want all or some of %s", n, strings.Join(all, ", "))
		}
		if slices.Contains(out[:i], n) {
			return nil, fmt.Errorf("entry %s named twice", n)
		}
		out[i] = n
	}
	return out, nil
}

// Run runs the named entries (Check; in the paper's order) into opts.Out
// and merges their rows into its results.md: the rows of entries run
// before, by other calls, stay (ResultsFile). Bad names and a results.md
// it cannot read are refused before any work starts.
func Run(ctx context.Context, names []string, opts Options) ([]Result, error) {
	names, err := Check(names)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("out %s: %v", opts.Out, err)
	}
	results := filepath.Join(opts.Out, ResultsFile)
	before, err := readResults(results)
	if err != nil {
		return nil, err
	}
	r := &reproducer{ctx: ctx, out: opts.Out, quick: opts.Quick, log: opts.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	var rows []Result
	for _, e := range entries {
		if !slices.Contains(names, e.name) {
			continue
		}
		if opts.Started != nil {
			opts.Started(len(rows), len(names), e.name)
		}
		t := time.Now()
		r.code = map[string]int{}
		row := Result{Entry: e.name, Claim: e.claim, Paper: e.paper, Quick: opts.Quick, Code: r.code}
		dir := filepath.Join(opts.Out, e.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return rows, err
		}
		m, agrees, err := e.run(r, dir)
		if err != nil {
			return rows, fmt.Errorf("reproduce %s: %w", e.name, err)
		}
		row.Measured, row.Agrees = m, agrees
		row.Seconds = time.Since(t).Seconds()
		rows = append(rows, row)
		if opts.Docs != "" && !opts.Quick {
			if err := copyFigures(dir, opts.Docs, e.name); err != nil {
				return rows, err
			}
			if err := writeStudyPage(dir, opts.Docs, row, Stamp(opts.command(names), opts.Docs)); err != nil {
				return rows, err
			}
		}
		if opts.Finished != nil {
			opts.Finished(len(rows), len(names), row)
		}
	}
	merged := mergeResults(before, rows)
	if err := writeResults(results, merged, Stamp(opts.command(names), opts.Docs), names); err != nil {
		return rows, err
	}
	if opts.Docs != "" && !opts.Quick && ranPaper(rows) {
		if slices.ContainsFunc(merged, func(r Result) bool { return r.Quick }) {
			fmt.Fprintf(r.log, "%s not copied to %s: it holds rows of -quick runs\n", results, opts.Docs)
			return rows, nil
		}
		return rows, writeResults(filepath.Join(opts.Docs, ResultsFile), paperRows(merged), Stamp(opts.command(names), opts.Docs), names)
	}
	return rows, nil
}

// paperRows are the rows of the paper's entries (Names): the
// documentation's results.md is the paper's table, whatever studies the
// out folder's results.md also holds (run in this call or kept from an
// earlier one).
func paperRows(rows []Result) []Result {
	return slices.DeleteFunc(slices.Clone(rows), func(r Result) bool { return !slices.Contains(Names(), r.Entry) })
}

// command is the command line for the stamp of the pages (Options.Command).
func (o Options) command(names []string) string {
	if o.Command != "" {
		return o.Command
	}
	c := "train reproduce " + strings.Join(names, " ")
	if o.Docs != "" {
		c += " -docs " + o.Docs
	}
	return c
}

// ranPaper reports whether rows hold every entry of the paper (Names; the
// studies may be there too): only then is results.md the paper's whole
// table, fit for the documentation.
func ranPaper(rows []Result) bool {
	for _, n := range Names() {
		if !slices.ContainsFunc(rows, func(r Result) bool { return r.Entry == n }) {
			return false
		}
	}
	return true
}

// docFigures maps each entry's figures to their names in the README's
// docs/ folder. A source name with a * (the studies draw one figure per
// graph) copies every match, the * of the target standing for the match's.
var docFigures = map[string][][2]string{
	"fig3-4":           {{"hitting_time.png", "fig3-hitting_time.png"}, {"abcd.png", "fig4-abcd.png"}},
	"thm1-pretrain":    {{"invalid_mass.png", "thm1-pretrain.png"}},
	"thm2-sft":         {{"abcd.png", "thm2-sft-abcd.png"}},
	"thm4-separation":  {{"separation.png", "thm4-separation.png"}},
	"corollary-search": {{"search_agent.png", "corollary-search.png"}},
	"thm5-distill":     {{"hitting_time.png", "thm5-distill.png"}},
	"fig5-sft-scaling": {{"sft_scaling.png", "fig5-sft-scaling.png"}},
	"fig5-partial":     {{"partial_supervision.png", "fig5-partial.png"}},
	"fig6-ppo":         {{"hitting_time.png", "fig6-ppo.png"}},
	"fig7-transformer": {{"hitting_time.png", "fig7-transformer.png"}},
	"fig8-hetero":      {{"hitting_time.png", "fig8-hetero.png"}},
	compareLearners:    {{"hitting_time-*.png", "compare-learners-*.png"}},
	rlvrAlgorithms:     {{"hitting_time_*.png", "rlvr-algorithms-*.png"}},
	// The transformer's PPO at the paper's size, one seed a rate: the
	// bigram's paper-size grid, whose diverged seeds stretch the 95% bands
	// over three decades, reads better as its table.
	defaultsStudy: {{"defaults-paper-transformer/hitting_time-W15K15L5.png", "defaults-paper-transformer.png"}},
}

// studyTables is each study's table, the body of its page in docs/
// (writeStudyPage).
var studyTables = map[string]string{compareLearners: "summary.md", rlvrAlgorithms: "algorithms.md", defaultsStudy: "defaults.md"}

// copyFigures copies an entry's figures from its folder into docs.
func copyFigures(dir, docs, name string) error {
	for _, f := range docFigures[name] {
		srcs := []string{filepath.Join(dir, f[0])}
		if strings.Contains(f[0], "*") {
			var err error
			if srcs, err = filepath.Glob(srcs[0]); err != nil || len(srcs) == 0 {
				return fmt.Errorf("reproduce %s: figures for the docs: no %s in %s", name, f[0], dir)
			}
		}
		for _, src := range srcs {
			data, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("reproduce %s: figure for the docs: %w", name, err)
			}
			if err := checkpoints.WriteFileAtomic(filepath.Join(docs, docName(f, filepath.Base(src))), data); err != nil {
				return err
			}
		}
	}
	return nil
}

// docName is the docs/ name of the figure base, copied by rule f.
func docName(f [2]string, base string) string {
	pre, post, ok := strings.Cut(f[0], "*")
	if !ok {
		return f[1]
	}
	return strings.Replace(f[1], "*", strings.TrimSuffix(strings.TrimPrefix(base, pre), post), 1)
}

// writeStudyPage writes a study's page into docs, <name>.md: what it
// claims and measured, its table and its figures; docs/results.md links to
// it (studiesNote). Entries of the paper have no page.
func writeStudyPage(dir, docs string, row Result, stamp string) error {
	table, ok := studyTables[row.Entry]
	if !ok {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, table))
	if err != nil {
		return fmt.Errorf("reproduce %s: its table for the docs: %w", row.Entry, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (a study beyond the paper, run by name)\n\n%s%s\n\n", row.Entry, stamp, runsMade(row.Code))
	fmt.Fprintf(&b, "Claim: %s.\n\nMeasured: %s. Agreement: %s.\n\n", row.Claim, row.Measured, row.Agrees)
	if bytes.HasPrefix(data, []byte("# ")) { // the table's own title: the page has one
		_, data, _ = bytes.Cut(data, []byte("\n"))
		data = bytes.TrimLeft(data, "\n")
	}
	b.Write(data)
	for _, f := range docFigures[row.Entry] {
		srcs, _ := filepath.Glob(filepath.Join(dir, f[0]))
		for _, src := range srcs {
			name := docName(f, filepath.Base(src))
			fmt.Fprintf(&b, "\n![%s](%s)\n", strings.TrimSuffix(name, ".png"), name)
		}
	}
	return checkpoints.WriteFileAtomic(filepath.Join(docs, row.Entry+".md"), []byte(b.String()))
}

// paperNotes is where the paper is imprecise, with the evidence.
const paperNotes = `
## Where the paper is imprecise

- Figures 3 and 6: the converged policy's exact hitting time is (2K+1)(2W-1) = 899, not 4WK = 900 (its
  leading term); see thm4-separation's data.
- Theorem 4 and Appendix D: SFT's exit time grows like ((L+1)^2/L)^K, not L^K; thm4-separation's fitted
  growth per depth matches (L+1)^2/L. Appendix D's substitution line writes (2i-1)/L where (2i-3)/L is
  right (its final constants are right).
- Corollary: the proof misses dead ends (the SFT policy steps onto an unused multiedge whose only move is
  a used connector). An agent that follows the policy there is exponential again; one that moves to an
  unused state shows Theta(W K L) (corollary-search).
- Heterogeneous figure: the exact optimum of RLVR lies below 4 sum_i k_i and below the uniform-entry
  value in both settings of the source row: frozen, deep branches turn back at their entry sometimes;
  trained, the walk enters the shallowest branch first (fig8-hetero).
- The paper leaves the source row s0 -> f open (it fixes only the fork- and leaf-incoming rows); training
  it lowers the optimum below the paper's converged policy (890.2 against 899 at W=K=15, L=5). The tool
  keeps it uniform unless -train-source.
- Section 5.3: the time from entering a wrong branch back to the fork is 2K + g_{K+1}, not g_{K+1}.
- Conventions: counting the edge s0 -> f as a step adds 1 to every hitting time (H_0 = 50142; 899 becomes
  900 = 4WK at W = K).
- Lemma 'Gjp_init': G_K^(d)(0) can be negative (W=2, K=3, L=2), against "r(W,K,L) <= K-1"; at
  W=K=15, L=5 no G_j^(p)(0) is negative (eval's tests).
`

// studiesNote links the studies' pages, written into docs/ when a study
// runs with -docs (writeStudyPage).
const studiesNote = `
## Studies beyond the paper

Run by name, not by all; each writes its own page with -docs:
[compare-learners](compare-learners.md) (the bigram and the transformer under PPO, GRPO, SFT and
distillation, 5 seeds, up to the paper's size) and [rlvr-algorithms](rlvr-algorithms.md) (every RLVR
trainer on the bigram with one budget of sampled tokens).
`

// sized picks the full or the -quick value.
func (r *reproducer) sized(full, quick int) int {
	if r.quick {
		return quick
	}
	return full
}

// trainEntry runs one training into dir and returns its summary.
func (r *reproducer) trainEntry(dir string, rc experiment.Config) (experiment.Summary, error) {
	rc.Out = dir
	s, err := experiment.Run(r.ctx, rc, experiment.Options{Force: true})
	if err == nil {
		r.saw(s)
	}
	return s, err
}

// collect is sweep.Collect, noting the code of each completed run (saw).
func (r *reproducer) collect(dirs []string) (*sweep.Collection, error) {
	c, err := sweep.Collect(dirs)
	if err != nil {
		return nil, err
	}
	for _, run := range c.Runs {
		if run.Summary != nil {
			r.saw(*run.Summary)
		}
	}
	return c, nil
}

// saw counts a run behind the current entry by its code.
func (r *reproducer) saw(s experiment.Summary) {
	if r.code != nil {
		r.code[codeKey(s.Code)]++
	}
}

func rel(x, y float64) float64 { return math.Abs(x-y) / math.Abs(y) }

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func graphConfig(w, k, l int) tasks.Config { return tasks.Config{W: w, K: k, L: l} }

// sameCurves returns curves as they are, or, when they all have the same
// values (within 1e-12), the first alone under name.
func sameCurves(curves []figures.Series, name string) []figures.Series {
	for _, c := range curves[1:] {
		for i, y := range c.Y {
			if i >= len(curves[0].Y) || rel(y, curves[0].Y[i]) > 1e-12 {
				return curves
			}
		}
	}
	one := curves[0]
	one.Name = name
	return []figures.Series{one}
}
