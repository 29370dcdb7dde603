package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// summary is summary.json: written last, its presence marks a complete run.
// Hitting times are null for pretraining, whose dense policy still puts mass
// on invalid transitions; it reports Theorem 1's quantities instead.
type summary struct {
	Model              string   `json:"model"`
	Trainer            string   `json:"trainer"`
	Graph              string   `json:"graph"`
	InitialHittingTime *float64 `json:"initial_hitting_time"`
	FinalHittingTime   *float64 `json:"final_hitting_time"`
	// A transformer's hitting times are Monte Carlo estimates: the final
	// one's 95% half-width and the share of evaluation rollouts that hit
	// (below 1, the estimate is a lower bound and has no interval).
	FinalCI95        *float64 `json:"final_hitting_time_ci95,omitempty"`
	FinalSuccessRate *float64 `json:"final_mc_success_rate,omitempty"`
	// Attention summarises the final transformer's attention along 200 of
	// its rollouts (trainers.AttentionStats).
	Attention        *trainers.AttentionStats `json:"attention,omitempty"`
	LimitHittingTime *float64                 `json:"limit_hitting_time"`
	InvalidMass      *float64                 `json:"final_invalid_mass,omitempty"`
	BoundRatio       *float64                 `json:"max_bound_ratio,omitempty"`
	Converged        bool                     `json:"converged"`
	Stalled          bool                     `json:"stalled"` // stopped for lack of progress (patience)
	Steps            int                      `json:"steps"`
	WallSeconds      float64                  `json:"wall_seconds"`
	FinalABCD        *[4]float64              `json:"final_mean_abcd"`
	Theory           eval.Predictions         `json:"theory"`
}

// runDir writes a run folder: config.json, metrics.csv, abcd.csv, the
// checkpoint, then summary.json and the plots at the end.
type runDir struct {
	dir            string
	metrics, abcd  *os.File
	mw, aw         *bufio.Writer
	initialHitting float64        // of step 0, from this session or the kept rows
	wall           func() float64 // seconds spent on the run, for the wall_seconds column
	sampled        bool           // reinforce or ppo: the batch columns apply
}

const (
	metricsHeader = "step,hitting_time,objective,a,b,c,d,invalid_mass,bound_ratio,tokens,rollouts,success_rate,mean_length,approx_kl,clip_frac,hitting_time_ci95,mc_success_rate,wall_seconds"
	abcdHeader    = "step,depth,a,b,c,d"
)

// openRunDir prepares dir: a fresh run clears what an earlier run left; a
// resumed run keeps the metrics of the steps before its checkpoint.
func openRunDir(dir string, cfgJSON []byte, ck *checkpoints.Checkpoint, force, sampled bool) (*runDir, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, usagef("run: -out %s: exists and is not a folder", dir)
	}
	if ck == nil && !force {
		if old, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
			if !bytes.Equal(bytes.TrimSpace(old), bytes.TrimSpace(cfgJSON)) {
				return nil, usagef("run: -out %s holds another run (its config.json differs): choose another -out, or -force to replace it", dir)
			}
		} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return nil, usagef("run: -out %s is a non-empty folder that is not a run folder: choose another -out, or -force", dir)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usagef("run: -out %s: %v", dir, err)
	}
	// Temporary files of writes a killed process never renamed.
	if stale, err := filepath.Glob(filepath.Join(dir, ".*.tmp*")); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	// The products of a finished run go first, so an interrupted new run
	// never looks complete.
	for _, f := range []string{"summary.json", "hitting_time.png", "abcd.png", "invalid_mass.png"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if ck == nil {
		if err := os.Remove(filepath.Join(dir, checkpointFile)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if err := checkpoints.WriteFileAtomic(filepath.Join(dir, "config.json"), append(cfgJSON, '\n')); err != nil {
		return nil, err
	}
	r := &runDir{dir: dir, initialHitting: math.NaN(), sampled: sampled}
	keep := -1 // keep rows with step < keep
	if ck != nil {
		keep = ck.Step
	}
	var err error
	var kept [][]string
	if r.metrics, kept, err = reopenCSV(filepath.Join(dir, "metrics.csv"), metricsHeader, keep); err != nil {
		return nil, err
	}
	for _, rec := range kept {
		if len(rec) > 1 && rec[0] == "0" {
			r.initialHitting, _ = strconv.ParseFloat(rec[1], 64)
		}
	}
	if r.abcd, _, err = reopenCSV(filepath.Join(dir, "abcd.csv"), abcdHeader, keep); err != nil {
		return nil, err
	}
	r.mw, r.aw = bufio.NewWriter(r.metrics), bufio.NewWriter(r.abcd)
	return r, nil
}

// reopenCSV rewrites path with its header and the rows whose step is below
// keep (none when keep < 0), and opens it for appending.
func reopenCSV(path, header string, keep int) (*os.File, [][]string, error) {
	var buf bytes.Buffer
	buf.WriteString(header + "\n")
	var kept [][]string
	if keep >= 0 {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return nil, nil, err
		}
		// Only complete lines count: a process killed mid-write leaves a
		// partial last line, which must not pass for a row.
		lines := strings.Split(string(data), "\n")
		fields := strings.Count(header, ",") + 1
		for i, line := range lines[:len(lines)-1] {
			rec := strings.Split(line, ",")
			if i == 0 || len(rec) != fields {
				continue
			}
			if step, err := strconv.Atoi(rec[0]); err == nil && step < keep {
				buf.WriteString(line + "\n")
				kept = append(kept, rec)
			}
		}
	}
	if err := checkpoints.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	return f, kept, err
}

func (r *runDir) write(row trainers.Row) error {
	if row.Step == 0 {
		r.initialHitting = row.HittingTime
	}
	sampled := []string{"", "", "", "", "", ""} // tokens .. clip_frac, for reinforce and ppo
	if r.sampled {
		b := row.Batch
		sampled = []string{strconv.Itoa(row.Tokens), strconv.Itoa(row.Rollouts), f64(b.SuccessRate), f64(b.MeanLength), f64(b.ApproxKL), f64(b.ClipFrac)}
	}
	mc := []string{"", ""} // hitting_time_ci95, mc_success_rate: Monte Carlo rows only
	if row.MCSuccessRate > 0 {
		mc = []string{f64(row.HittingTimeCI95), f64(row.MCSuccessRate)}
	}
	wall := math.NaN()
	if r.wall != nil {
		wall = r.wall()
	}
	fmt.Fprintf(r.mw, "%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f\n", row.Step, f64(row.HittingTime), f64(row.Objective),
		f64(row.A), f64(row.B), f64(row.C), f64(row.D), f64(row.InvalidMass), f64(row.BoundRatio), strings.Join(sampled, ","), strings.Join(mc, ","), wall)
	for _, d := range row.Depths {
		fmt.Fprintf(r.aw, "%d,%d,%s,%s,%s,%s\n", row.Step, d.Depth, f64(d.A), f64(d.B), f64(d.C), f64(d.D))
	}
	// Flushed at every row: an interrupted run keeps its metrics.
	if err := r.mw.Flush(); err != nil {
		return err
	}
	return r.aw.Flush()
}

// f64 formats a float exactly (shortest round-trip form); NaN, a value that
// does not apply to the trainer, is left empty.
func f64(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func (r *runDir) close() {
	r.mw.Flush()
	r.aw.Flush()
	r.metrics.Close()
	r.abcd.Close()
}

// finish writes the plots, then summary.json last.
func (r *runDir) finish(s summary) error {
	if err := r.mw.Flush(); err != nil {
		return err
	}
	if err := r.aw.Flush(); err != nil {
		return err
	}
	if err := writePlots(r.dir, s); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	return checkpoints.WriteFileAtomic(filepath.Join(r.dir, "summary.json"), append(b, '\n'))
}

// saveCheckpoint writes the trainer state with the run's config and the
// wall time spent on the run so far.
func saveCheckpoint(path string, cfgJSON []byte, st trainers.State, wall float64) error {
	meta := map[string]float64{"wall_seconds": wall}
	for k, v := range st.Counters {
		meta[k] = v
	}
	kind, params := "bigram", checkpoints.Tensor{Name: "logits", Data: st.Logits}
	if st.Params != nil {
		kind, params = "transformer", checkpoints.Tensor{Name: "params", Data: st.Params}
	}
	return checkpoints.Save(path, &checkpoints.Checkpoint{
		Kind: kind, Config: cfgJSON, Step: st.Step, RNG: st.RNG, Meta: meta,
		Tensors: []checkpoints.Tensor{params, {Name: "optimizer", Data: st.Optim}, {Name: "critic", Data: st.Critic}},
	})
}

// restore loads a checkpoint into a trainer built from the same config.
func restore(tr *trainers.Trainer, ck *checkpoints.Checkpoint, cfgJSON []byte) error {
	kind, name, n := "bigram", "logits", 0
	if tf := tr.Transformer(); tf != nil {
		kind, name = "transformer", "params"
		for _, p := range tf.Learnables() {
			n += p.Shape().TotalSize()
		}
	} else {
		n = len(tr.Model().Logits())
	}
	if ck.Kind != kind {
		return usagef("run: checkpoint is a %s model, this run trains a %s", ck.Kind, kind)
	}
	params, err := ck.Tensor(name, n)
	if err != nil {
		return usagef("run: %v", err)
	}
	opt, err := ck.Tensor("optimizer", -1)
	if err != nil {
		return usagef("run: %v", err)
	}
	critic, err := ck.Tensor("critic", -1)
	if err != nil {
		return usagef("run: %v", err)
	}
	counters := map[string]float64{}
	for k, v := range ck.Meta {
		if k != "wall_seconds" {
			counters[k] = v
		}
	}
	st := trainers.State{Step: ck.Step, Logits: params}
	if kind == "transformer" {
		st.Logits, st.Params = nil, params
	}
	st.Optim, st.RNG, st.Counters, st.Critic = opt, ck.RNG, counters, critic
	if err := tr.Restore(st); err != nil {
		return usagef("run: checkpoint: %v", err)
	}
	return nil
}

// logitsOf returns logits whose softmax is the transition table probs (CSR
// order): log-probabilities, with impossible transitions at a logit far
// below the rest (their probability underflows to 0).
func logitsOf(probs []float64) []float64 {
	out := make([]float64, len(probs))
	for i, p := range probs {
		out[i] = math.Log(p)
		if p == 0 {
			out[i] = -1e3
		}
	}
	return out
}

// loadTeacher returns the distillation teacher's transition table:
// rlvr-limit, or the bigram checkpointed in a run folder on the same graph.
func loadTeacher(spec string, g *tasks.Graph) ([]float64, error) {
	if spec == "rlvr-limit" {
		return eval.PolicyRLVRLimit(g), nil
	}
	_, probs, err := bigramFromRun(spec, g)
	if err != nil {
		return nil, usagef("run: -teacher %s: %v", spec, err)
	}
	return probs, nil
}

// bigramFromRun loads the transition table of the bigram checkpointed in
// dir, checking that it was trained on graph g (g nil: its own graph).
func bigramFromRun(dir string, g *tasks.Graph) (*tasks.Graph, []float64, error) {
	ck, err := checkpoints.Load(filepath.Join(dir, checkpointFile))
	if err != nil {
		return nil, nil, err
	}
	if ck.Kind != "bigram" {
		return nil, nil, fmt.Errorf("checkpoint is a %s model, want a bigram", ck.Kind)
	}
	var rc runConfig
	if err := json.Unmarshal(ck.Config, &rc); err != nil {
		return nil, nil, fmt.Errorf("checkpoint config: %v", err)
	}
	if err := rc.Graph.Validate(); err != nil {
		return nil, nil, fmt.Errorf("checkpoint config: %v", err)
	}
	if g == nil {
		if g, err = tasks.New(rc.Graph); err != nil {
			return nil, nil, err
		}
	} else if a, b := rc.Graph.Name(), g.Config.Name(); a != b {
		return nil, nil, fmt.Errorf("checkpoint was trained on graph %s, this graph is %s", a, b)
	}
	var logits []float64
	if rc.Train.Trainer == "pretrain" {
		// A dense pretrained model: its logits on the valid transitions are
		// the world model it learned (Assumption 'exact_pretrain' drops the
		// rest).
		v := g.NumStates()
		dense, err := ck.Tensor("logits", v*v)
		if err != nil {
			return nil, nil, err
		}
		logits = make([]float64, len(g.Next))
		for s := range v {
			for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
				logits[i] = dense[s*v+g.Next[i]]
			}
		}
	} else if logits, err = ck.Tensor("logits", len(g.Next)); err != nil {
		return nil, nil, err
	}
	m, err := nn.NewBigram(nn.BigramConfig{Vocab: g.NumStates(), Support: nn.Support{Offsets: g.Offsets, Next: g.Next}}, logits)
	if err != nil {
		return nil, nil, err
	}
	return g, m.Probs(), nil
}

// finite returns &x, or nil for NaN and infinities (JSON null).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// val reads an optional number for printing (NaN when absent).
func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// printSummary prints the closing table of a run.
func printSummary(w io.Writer, rc runConfig, s summary) {
	if s.Trainer == "pretrain" {
		fmt.Fprintf(w, "\npretrain on graph %s, %d steps in %.2fs -> %s\n", s.Graph, s.Steps, s.WallSeconds, rc.Out)
		fmt.Fprintf(w, "  largest mass on invalid transitions  %.3g\n", val(s.InvalidMass))
		fmt.Fprintf(w, "  largest ratio to Theorem 1's bound   %.3g (<= 1 when the bound holds; sgd)\n", val(s.BoundRatio))
		return
	}
	model := ""
	if s.Model == "transformer" {
		model = " (transformer; Monte Carlo hitting times)"
	}
	fmt.Fprintf(w, "\n%s on graph %s%s, %d steps in %.2fs -> %s\n", s.Trainer, s.Graph, model, s.Steps, s.WallSeconds, rc.Out)
	fmt.Fprintf(w, "  %-28s %14s   %s\n", "", "measured", "theory")
	th := "-"
	if s.Theory.H0 > 0 {
		th = num(s.Theory.H0) + " (H_0)"
	}
	fmt.Fprintf(w, "  %-28s %14s   %s\n", "initial hitting time", num(val(s.InitialHittingTime)), th)
	lim := "-"
	if l := val(s.LimitHittingTime); l > 0 {
		lim = fmt.Sprintf("%s (limit; leading term 4 sum k = %s)", num(l), num(s.Theory.RLVRLeading))
		if rc.Train.Trainer == "sft" {
			lim = num(l) + " (SFT limit)"
		}
	}
	final := num(val(s.FinalHittingTime))
	if s.FinalCI95 != nil {
		final += fmt.Sprintf(" ± %.3g", *s.FinalCI95)
	} else if s.FinalSuccessRate != nil {
		final = fmt.Sprintf(">= %s (%.1f%% hit)", final, 100*(*s.FinalSuccessRate))
	}
	fmt.Fprintf(w, "  %-28s %14s   %s\n", "final hitting time", final, lim)
	if a := s.FinalABCD; a != nil {
		fmt.Fprintf(w, "  %-28s %14s\n", "final mean a, b, c, d", fmt.Sprintf("%.4f %.4f %.4f %.4f", a[0], a[1], a[2], a[3]))
	}
}

// metricsColumn is the index of a metrics.csv column (-1: none).
func metricsColumn(name string) int { return slices.Index(strings.Split(metricsHeader, ","), name) }

// maxColumn is the largest value of a metrics.csv column over the whole run
// (resumed sessions included).
func (r *runDir) maxColumn(name string) float64 {
	r.mw.Flush()
	rows, err := readCSV(filepath.Join(r.dir, "metrics.csv"))
	col := metricsColumn(name)
	if err != nil || col < 0 {
		return math.NaN()
	}
	m := math.NaN()
	for _, row := range rows {
		if col < len(row) && !(row[col] <= m) {
			m = row[col]
		}
	}
	return m
}

// writeVocab writes the graph's token vocabulary, vocab.txt, into the run
// folder: the names behind the token ids of the checkpoint's rows.
func writeVocab(dir string, g *tasks.Graph) error {
	var buf bytes.Buffer
	if _, err := tokenizer.New(g).WriteTo(&buf); err != nil {
		return err
	}
	return checkpoints.WriteFileAtomic(filepath.Join(dir, "vocab.txt"), buf.Bytes())
}
