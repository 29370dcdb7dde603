package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// progress shows a bar with the current hitting time on a terminal, and one
// greppable log line per second otherwise (CI, pipes).
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	last  time.Time
	began time.Time
	row   trainers.Row
	shown int // step of the last line logged (-1: none)
}

func newProgress(w io.Writer) *progress { return &progress{w: w, began: time.Now(), shown: -1} }

// start is called when the run is set up: its step cap and first step.
func (p *progress) start(cfg experiment.Config, done int) {
	p.total = cfg.Train.Steps
	if done > 0 {
		fmt.Fprintf(p.w, "resuming %s from its checkpoint at step %d\n", cfg.Out, done)
	}
	if f, ok := p.w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(p.total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		p.bar.Set(done)
	}
}

func (p *progress) update(r trainers.Row) {
	p.row = r
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("hitting time %-12.6g", r.HittingTime))
		p.bar.Set(r.Step)
		return
	}
	if time.Since(p.last) >= time.Second {
		p.log()
	}
}

func (p *progress) log() {
	r := p.row
	extra := ""
	if r.Rollouts > 0 {
		extra = fmt.Sprintf(" tokens %d success %.3f approx_kl %.3g clip %.3f", r.Tokens, r.Batch.SuccessRate, r.Batch.ApproxKL, r.Batch.ClipFrac)
	}
	h := fmt.Sprintf("hitting_time %.6g", r.HittingTime)
	if r.Estimated {
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

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		return
	}
	if p.shown >= 0 && p.row.Step != p.shown {
		p.log()
	}
}
