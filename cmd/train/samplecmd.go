package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// sampleReport is what train sample prints, as text or as one JSON object.
type sampleReport struct {
	Run      string         `json:"run"`
	Model    string         `json:"model"`
	Trainer  string         `json:"trainer"`
	Step     int            `json:"step"`
	Graph    string         `json:"graph"`
	Seed     uint64         `json:"seed"`
	Horizon  int            `json:"horizon,omitempty"` // sampled rollouts only
	Rollouts []sampledTrace `json:"rollouts"`
}

// sampledTrace is one rollout or golden path: its states as token names,
// s0 -> f first.
type sampledTrace struct {
	Target      int      `json:"target"`
	Golden      bool     `json:"golden"`
	Tokens      []string `json:"tokens"`
	Transitions int      `json:"transitions"`
	Hit         bool     `json:"hit"`
	// Shortest (golden paths) is whether the path has the 2k+1
	// transitions of a shortest path to its target's leaf.
	Shortest *bool `json:"shortest,omitempty"`
	// Probs (with -probs) are each transition's probability under the
	// model: the sampler's own for a sampled rollout, a replay for a
	// golden path.
	Probs []float64 `json:"probs,omitempty"`
}

// sampleBytes is about the memory one sampled transition takes while its
// rollout is printed: the entry, its log-probability and probability, the
// state and its token name.
const sampleBytes = 128

func runSample(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sample")
	n := fs.Int("n", 5, "rollouts (or golden paths) to print")
	target := fs.Int("target", 0, "target leaf 1..W of every rollout (0: uniform, as in training)")
	seed := fs.Uint64("seed", 1, "seed: rollout i draws its target and transitions from the stream (seed, i), as the Monte Carlo's rollout i does")
	golden := fs.Bool("golden", false, "print golden (shortest) paths with uniform multiedges instead of sampling the model")
	probs := fs.Bool("probs", false, "print each transition's probability under the model")
	horizon := fs.Int("horizon", 0, "stop a rollout after this many transitions (0: a transformer's Monte Carlo horizon, 50 times its starting bigram's hitting time; for a bigram 50 times the pretrained one's)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	maxBytes := maxBytesFlag(fs)
	dir, err := parseDir(fs, args, stdout)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usagef("sample: -n %d: want >= 1", *n)
	}
	if *horizon < 0 {
		return usagef("sample: -horizon %d: want >= 0 (0: the default)", *horizon)
	}
	budget, err := resolveBudget(fs, *maxBytes)
	if err != nil {
		return err
	}
	c, err := experiment.Open(dir, budget)
	if err != nil {
		return usagef("sample: %s: %v", dir, err)
	}
	defer c.Close()
	g := c.Graph
	if *target < 0 || *target > g.W() {
		return usagef("sample: -target %d: want 0 (uniform) or a leaf 1 to %d", *target, g.W())
	}
	rep := &sampleReport{Run: dir, Model: string(c.Config.Model), Trainer: c.Config.Train.Trainer.String(), Step: c.Step, Graph: g.Config.Name(), Seed: *seed}
	var a eval.Agent // one agent for every rollout: Start resets it
	if !*golden {
		if rep.Horizon = *horizon; rep.Horizon == 0 {
			if rep.Horizon, err = defaultHorizon(c); err != nil {
				return err
			}
		}
		// Rollouts are printed as they are drawn: memory holds one.
		what := fmt.Sprintf("a rollout of up to %d transitions (-horizon)", rep.Horizon)
		if err := overBudget("sample", what, sampleBytes*float64(rep.Horizon), tasks.EstimateBytes(g.Config.Size()), budget); err != nil {
			return err
		}
		if c.Kind == "dense-bigram" {
			fmt.Fprintln(stderr, "train: sample: a pretrained dense bigram: sampling its valid transitions only (Assumption 'exact_pretrain')")
		}
		if a, err = c.Agents()(); err != nil {
			return err
		}
	}
	var out sampleWriter = &textSample{w: stdout}
	if *asJSON {
		out = &jsonSample{w: stdout}
	}
	if err := out.begin(rep, *golden); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	sig := catchSignals()
	defer sig.stop()
	for i := range *n {
		rng := rand.New(rand.NewPCG(*seed, uint64(i)))
		x := 1 + rng.IntN(g.W())
		if *target > 0 {
			x = *target
		}
		tr, err := sampleOne(sig.ctx, c, a, x, rep.Horizon, rng)
		if err == nil {
			err = sig.ctx.Err() // a golden path does not look at the context
		}
		if err != nil && sig.ctx.Err() != nil {
			// What is printed stays whole: the rollouts so far, and with
			// -json the object closed.
			if err := out.end(); err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			caught := sig.caught()
			return signalled{caught, fmt.Sprintf("sample: interrupted by %v after %d of %d rollouts, each printed whole", caught, i, *n)}
		}
		if err != nil {
			return err
		}
		if !*probs {
			tr.Probs = nil
		}
		if err := out.trace(i, tr); err != nil {
			return fmt.Errorf("sample: %w", err)
		}
	}
	if err := out.end(); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	return nil
}

// sampleOne draws one rollout of agent a toward target x, or with a nil
// agent a golden path to it, with each transition's probability.
func sampleOne(ctx context.Context, c *experiment.Checkpointed, a eval.Agent, x, horizon int, rng *rand.Rand) (sampledTrace, error) {
	g := c.Graph
	tr := sampledTrace{Target: x, Golden: a == nil}
	path := []int{0}
	if a == nil {
		p, err := g.RandomGoldenPath(x, rng)
		if err != nil {
			return tr, err
		}
		lp, err := c.Replay(x, p)
		if err != nil {
			return tr, err
		}
		path, tr.Probs = p, exps(lp)
		shortest := len(p)-1 == 2*g.Branches[x-1].Depth()+1
		tr.Shortest = &shortest
		tr.Hit = verified(g, p, x)
	} else {
		entries, lp, hit, err := eval.Rollout(ctx, g, a, x, horizon, rng)
		if err != nil {
			return tr, err
		}
		for _, e := range entries {
			path = append(path, g.Next[e])
		}
		tr.Hit, tr.Probs = hit, exps(lp)
	}
	tr.Transitions = len(path) - 1
	for _, s := range path {
		name, err := c.Vocab.Name(s)
		if err != nil {
			return tr, err
		}
		tr.Tokens = append(tr.Tokens, name)
	}
	return tr, nil
}

// verified is the verifier on a path of states from s0 -> f: every step a
// transition of the graph, and the target's leaf reached first at the
// last state.
func verified(g *tasks.Graph, path []int, target int) bool {
	if len(path) == 0 || path[0] != 0 {
		return false
	}
	for i, s := range path {
		if g.Hits(s, target) != (i == len(path)-1) {
			return false
		}
		if i > 0 && g.Entry(path[i-1], s) < 0 {
			return false
		}
	}
	return true
}

func exps(lp []float64) []float64 {
	out := make([]float64, len(lp))
	for i, v := range lp {
		out[i] = math.Exp(v)
	}
	return out
}

// defaultHorizon is the run's Monte Carlo horizon for a transformer, and
// for a bigram 50 times the pretrained world model's hitting time.
func defaultHorizon(c *experiment.Checkpointed) (int, error) {
	if c.Trainer != nil {
		return c.Trainer.Horizon(), nil
	}
	probs, err := eval.Named(c.Graph, "pretrained")
	if err != nil {
		return 0, err
	}
	res, err := eval.NewAnalyzer(c.Graph).Analyze(probs)
	if err != nil {
		return 0, err
	}
	return int(math.Ceil(50 * res.HittingTime)), nil
}

// sampleWriter prints a sample report as its rollouts are drawn: the
// header, each rollout, the end.
type sampleWriter interface {
	begin(rep *sampleReport, golden bool) error
	trace(i int, tr sampledTrace) error
	end() error
}

// textSample prints the report as text.
type textSample struct {
	w    io.Writer
	what string // rollout or golden path
}

func (t *textSample) begin(rep *sampleReport, golden bool) error {
	t.what = map[bool]string{false: "rollout", true: "golden path"}[golden]
	line := fmt.Sprintf("%s: %s %s at step %d on graph %s, seed %d", rep.Run, rep.Model, rep.Trainer, rep.Step, rep.Graph, rep.Seed)
	if rep.Horizon > 0 {
		line += fmt.Sprintf(", horizon %d", rep.Horizon)
	}
	_, err := fmt.Fprintln(t.w, line)
	return err
}

func (t *textSample) trace(i int, r sampledTrace) error {
	status := map[bool]string{true: "hit", false: "missed"}[r.Hit]
	if r.Golden {
		status = map[bool]string{true: "verified", false: "REFUSED by the verifier"}[r.Hit]
		if r.Shortest != nil && *r.Shortest {
			status += ", shortest (2k+1)"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d toward <t%d>: %d transitions, %s\n", t.what, i+1, r.Target, r.Transitions, status)
	if r.Probs == nil {
		fmt.Fprintf(&b, "  %s\n", strings.Join(r.Tokens, " "))
	} else {
		fmt.Fprintf(&b, "  %s\n", r.Tokens[0])
		for j, tok := range r.Tokens[1:] {
			fmt.Fprintf(&b, "  %-22s p %.4g\n", tok, r.Probs[j])
		}
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *textSample) end() error { return nil }

// jsonSample prints the report as the one indented JSON object
// writeIndented would print, its rollouts streamed one by one.
type jsonSample struct {
	w io.Writer
}

func (j *jsonSample) begin(rep *sampleReport, golden bool) error {
	head := *rep
	head.Rollouts = []sampledTrace{}
	var b bytes.Buffer
	if err := writeIndented(&b, head); err != nil {
		return err
	}
	text, ok := strings.CutSuffix(b.String(), "[]\n}\n")
	if !ok {
		return fmt.Errorf("json: unexpected end of the report's header %q", b.String())
	}
	_, err := io.WriteString(j.w, text+"[")
	return err
}

func (j *jsonSample) trace(i int, tr sampledTrace) error {
	var b bytes.Buffer
	if i > 0 {
		b.WriteByte(',')
	}
	b.WriteString("\n    ")
	enc := json.NewEncoder(&b)
	enc.SetIndent("    ", "  ")
	enc.SetEscapeHTML(false) // token names hold '>'
	if err := enc.Encode(tr); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	_, err := j.w.Write(b.Bytes())
	return err
}

func (j *jsonSample) end() error {
	_, err := io.WriteString(j.w, "\n  ]\n}\n")
	return err
}

// parseDir parses a subcommand's flags around one run folder argument
// (before, between or after the flags). Integer flags are decimal
// (decimalFlags), as for parseFlags.
func parseDir(fs *flag.FlagSet, args []string, stdout io.Writer) (string, error) {
	decimalFlags(fs)
	dir := ""
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				fmt.Fprintf(stdout, "usage: train %s DIR [flags]\n", fs.Name())
				printFlags(fs, stdout)
				return "", errHelp
			}
			return "", usagef("%s: %v (see train %s -h)", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			break
		}
		if dir != "" {
			return "", usagef("%s: unexpected argument %q besides the run folder %s", fs.Name(), fs.Arg(0), dir)
		}
		dir, args = fs.Arg(0), fs.Args()[1:]
	}
	if dir == "" {
		return "", usagef("%s: want a run folder: train %s DIR [flags]", fs.Name(), fs.Name())
	}
	return dir, nil
}
