package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// barUnits is the resolution of the bar: it shows a fraction of the way
// to what ends the run, not steps.
const barUnits = 1000

// progress shows a bar on a terminal, and one greppable log line per
// second otherwise (CI, pipes). The bar measures what ends the run: the
// distance to the -until target when one is set (on a log scale, from the
// first row's distance), and the steps; whichever is nearer its end. Its
// description holds the step and the value of the same row, the distance
// to the limit, the sampled tokens per second and, for PPO, the KL.
type progress struct {
	w        io.Writer
	bar      *progressbar.ProgressBar
	terminal bool // show a bar (tests set it on a buffer)
	total    int  // the step cap
	until    float64
	limit    float64 // the hitting time the run converges to (0: none)
	dense    bool    // pretraining: the stop rule reads the invalid mass
	clipped  bool    // PPO and the group-relative trainers: approx_kl and clip_frac apply
	first    float64 // the distance at the first row (NaN: none yet)
	last     time.Time
	began    time.Time
	row      trainers.Row
	rate     float64 // sampled tokens per second between the last two rows
	prevAt   time.Time
	shown    int // step of the last line logged (-1: none)
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, began: time.Now(), shown: -1, first: math.NaN(), terminal: ok && term.IsTerminal(int(f.Fd()))}
}

// start is called when the run is set up, before its first (possibly
// slow) measurement: its configuration, first step and limit.
func (p *progress) start(cfg experiment.Config, done int, limit float64) {
	p.total, p.until, p.limit = cfg.Train.Steps, cfg.Train.Until, limit
	p.dense, p.clipped = cfg.Train.Trainer.Dense(), cfg.Train.Trainer.Clipped()
	p.row.Step = done
	if done > 0 {
		fmt.Fprintf(p.w, "resuming %s from its checkpoint at step %d\n", cfg.Out, done)
	}
	what := "measuring the policy"
	var how []string
	if cfg.Model == trainers.TransformerModel {
		how = append(how, "Monte Carlo")
	}
	if cfg.Train.Hindsight {
		how = append(how, walksNote)
	}
	if len(how) > 0 {
		what += " (" + strings.Join(how, "; ") + ")"
	}
	if !p.terminal {
		if cfg.Model == trainers.TransformerModel {
			fmt.Fprintf(p.w, "step %d/%d %s\n", done, p.total, what)
		}
		return
	}
	// The bar's own time prediction assumes a steady rate of units (it
	// says 0s left at 0%); the run's way is on a log scale: the time left
	// is estimated in the description instead (describe), once there is
	// some way behind. The bar stays on its line at the end.
	p.bar = progressbar.NewOptions(barUnits,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetWidth(20),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(0), // update throttles, so every render shows one row
	)
	p.bar.Describe(fmt.Sprintf("step %d/%d %s", done, p.total, what))
	p.bar.RenderBlank()
}

// distance is how far a row is from the -until stop rule's threshold's
// reference: the relative distance to the limit (for a Monte Carlo
// estimate, of its interval's upper end, as the rule reads it), or for
// pretraining the mass on invalid transitions. NaN when there is no rule.
func (p *progress) distance(r trainers.Row) float64 {
	switch {
	case p.until <= 0:
		return math.NaN()
	case p.dense:
		return r.InvalidMass
	case p.limit <= 0:
		return math.NaN()
	case r.Estimated && r.MCSuccessRate == 1:
		return (r.HittingTime+r.HittingTimeCI95)/p.limit - 1
	case r.Estimated:
		return r.HittingTime/p.limit - 1 // a lower bound
	}
	return math.Abs(r.HittingTime-p.limit) / p.limit
}

// fraction is how far the run is toward its end: the larger of the steps'
// share and the distance's way from the first row's to the target, on a
// log scale (1 once within the target).
func (p *progress) fraction(r trainers.Row) float64 {
	f := 0.0
	if p.total > 0 {
		f = float64(r.Step) / float64(p.total)
	}
	if d := p.distance(r); !math.IsNaN(d) && !math.IsNaN(p.first) {
		switch {
		case d <= p.until:
			f = 1
		case p.first > p.until:
			f = max(f, math.Log(p.first/d)/math.Log(p.first/p.until))
		}
	}
	return min(max(f, 0), 1)
}

// describe is the bar's text for a row, kept short so the bar fits on
// one line: the step, the hitting time (H, with its 95% half-width when
// estimated), its distance to the limit as the -until rule reads it (a
// Monte Carlo estimate's upper end) and the target distance, the sampled
// tokens per second and PPO's KL.
func (p *progress) describe(r trainers.Row) string {
	s := fmt.Sprintf("step %d/%d H %.6g", r.Step, p.total, r.HittingTime)
	if p.dense {
		s = fmt.Sprintf("step %d/%d invalid mass %.3g", r.Step, p.total, r.InvalidMass)
	}
	if r.Estimated && r.MCSuccessRate == 1 {
		s += fmt.Sprintf("±%.3g", r.HittingTimeCI95)
	} else if r.Estimated {
		s += fmt.Sprintf(" (>=, %.1f%% hit)", 100*r.MCSuccessRate)
	}
	if d := p.distance(r); !math.IsNaN(d) && !p.dense {
		s += fmt.Sprintf(" limit %s %+.3g%% (stop %+.3g%%)", num(p.limit), 100*d, 100*p.until)
	} else if !math.IsNaN(d) {
		s += fmt.Sprintf(" (stop %.3g)", p.until)
	}
	if p.rate > 0 {
		s += " " + si(p.rate) + " tok/s"
	}
	if p.clipped && r.Rollouts > 0 {
		s += fmt.Sprintf(" kl %.2g", r.Batch.ApproxKL)
	}
	return s
}

// si prints a rate with a k, M or G suffix.
func si(x float64) string {
	for _, u := range []struct {
		v float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if x >= u.v {
			return fmt.Sprintf("%.3g%s", x/u.v, u.s)
		}
	}
	return fmt.Sprintf("%.3g", x)
}

func (p *progress) update(r trainers.Row) {
	now := time.Now()
	if dt := now.Sub(p.prevAt).Seconds(); !p.prevAt.IsZero() && r.Tokens > p.row.Tokens && dt > 0 {
		p.rate = float64(r.Tokens-p.row.Tokens) / dt
	}
	p.row, p.prevAt = r, now
	if math.IsNaN(p.first) {
		p.first = p.distance(r)
	}
	if p.bar != nil {
		if now.Sub(p.last) >= 100*time.Millisecond {
			p.render()
		}
		return
	}
	if now.Sub(p.last) >= time.Second {
		p.log()
	}
}

// render shows the latest row: its step and value together, and the time
// left at the pace so far once 1% of the way is behind.
func (p *progress) render() {
	f := p.fraction(p.row)
	text := p.describe(p.row)
	if elapsed := time.Since(p.began); f >= 0.01 && f < 1 {
		text += " ~" + (time.Duration(float64(elapsed) * (1 - f) / f)).Round(time.Second).String() + " left"
	}
	p.bar.Describe(text)
	p.bar.Set(int(barUnits * f))
	p.last = time.Now()
}

func (p *progress) log() {
	r := p.row
	extra := ""
	if r.Rollouts > 0 {
		extra = fmt.Sprintf(" tokens %d tokens_per_s %.3g success %.3f", r.Tokens, p.rate, r.Batch.SuccessRate)
		if p.clipped {
			extra += fmt.Sprintf(" approx_kl %.3g clip %.3f", r.Batch.ApproxKL, r.Batch.ClipFrac)
		}
	}
	// What applies: pretraining's dense policy has no hitting time (it
	// puts mass on invalid transitions); it logs Theorem 1's quantities.
	h := fmt.Sprintf("hitting_time %.6g", r.HittingTime)
	switch {
	case p.dense:
		h = fmt.Sprintf("invalid_mass %.6g bound_ratio %.6g", r.InvalidMass, r.BoundRatio)
	case r.Estimated:
		h += fmt.Sprintf(" ci95 %.3g mc_success %.3f", r.HittingTimeCI95, r.MCSuccessRate)
	}
	abcd := ""
	if !math.IsNaN(r.A) {
		abcd = fmt.Sprintf(" a %.4f b %.4f c %.4f d %.4f", r.A, r.B, r.C, r.D)
	}
	fmt.Fprintf(p.w, "step %d/%d %s objective %.6g%s%s elapsed %.1fs\n",
		r.Step, p.total, h, r.Objective, abcd, extra, time.Since(p.began).Seconds())
	p.last, p.shown = time.Now(), r.Step
}

// finish ends the display: on a terminal the bar shows the last row, at
// 100% when the run ended (completed), where it was otherwise.
func (p *progress) finish(completed bool) {
	if p.bar != nil {
		if completed {
			p.bar.Finish()
		} else {
			p.bar.Set(int(barUnits * p.fraction(p.row)))
		}
		p.bar.Describe(p.describe(p.row))
		fmt.Fprintln(p.w)
		return
	}
	if p.shown >= 0 && p.row.Step != p.shown {
		p.log()
	}
}
