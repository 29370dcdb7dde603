package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// Options are how a plan is carried out.
type Options struct {
	// Jobs is the number of runs trained at once (0: runtime.NumCPU()).
	// Each run's sampling already spreads over every core, so Jobs trades
	// the parallelism inside a run for parallelism across runs.
	Jobs int
	// Shard selects the runs this process trains (zero: all).
	Shard Shard
	// Started is called when a run is taken up, with its state before
	// (nil: none); Finished when it ends, with how many of the shard's runs
	// have ended (nil: none). Both are called from the workers, one at a
	// time.
	Started  func(r Run, st State)
	Finished func(done, total int, res Result)
	// Run is the per-run options (progress hooks); Force is set by the
	// sweep.
	Run experiment.Options
}

// Result is what became of one run.
type Result struct {
	Run     Run
	Before  State              // the folder's state when the run was taken up
	Summary experiment.Summary // of a run that completed (this time or before)
	Err     error              // a failed or interrupted run (*experiment.Interrupted)
	Seconds float64            // spent in this process
}

// Skipped reports a run that was done (or stalled) before this process.
func (r Result) Skipped() bool { return r.Before == Done || r.Before == Stalled }

// Report is the outcome of Execute.
type Report struct {
	Shard   Shard
	Results []Result // the shard's runs, in index order (nil Summary where not run)
}

// Counts says how many of the shard's runs were skipped, trained,
// interrupted or failed.
func (r Report) Counts() (skipped, trained, interrupted, failed int) {
	for _, res := range r.Results {
		var in *experiment.Interrupted
		switch {
		case errors.As(res.Err, &in):
			interrupted++
		case res.Err != nil || res.Before == Stalled:
			failed++
		case res.Skipped():
			skipped++
		case res.Summary.Out != "":
			trained++
		}
	}
	return
}

// ErrInterrupted is returned by Execute when its context was canceled: every
// run that had started wrote its checkpoint, and running the sweep again
// resumes them.
var ErrInterrupted = errors.New("sweep interrupted")

// Shard returns the plan's runs in the shard.
func (p *Plan) Shard(s Shard) []Run {
	if s.N == 0 {
		s = All
	}
	var out []Run
	for _, r := range p.Runs {
		if s.Has(r.Index) {
			out = append(out, r)
		}
	}
	return out
}

// Check reads the state of every run of the shard before any work; a
// folder that holds another configuration is an error.
func (p *Plan) Check(s Shard) ([]State, error) {
	var states []State
	for _, r := range p.Shard(s) {
		st, err := r.State()
		if err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	return states, nil
}

// Execute trains the shard's runs that are not done, Jobs at a time: new
// runs from step 0, runs with a checkpoint from it, done runs skipped. It
// writes the sweep's index first. A failed run does not stop the others;
// a canceled ctx stops every running run with a checkpoint and starts no
// other. The error names the failed runs, or is ErrInterrupted.
func Execute(ctx context.Context, p *Plan, opts Options) (Report, error) {
	if opts.Shard.N == 0 {
		opts.Shard = All
	}
	rep := Report{Shard: opts.Shard}
	todo := p.Shard(opts.Shard)
	states, err := p.Check(opts.Shard)
	if err != nil {
		return rep, err
	}
	if err := p.WriteIndex(); err != nil {
		return rep, err
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	rep.Results = make([]Result, len(todo))
	var mu sync.Mutex // serialises the callbacks and the count
	ended := 0
	finish := func(i int, res Result) {
		mu.Lock()
		defer mu.Unlock()
		rep.Results[i] = res
		ended++
		if opts.Finished != nil {
			opts.Finished(ended, len(todo), res)
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				finish(i, trainOne(ctx, todo[i], states[i], opts, &mu))
			}
		}()
	}
feed:
	for i := range todo {
		if states[i] == Done || states[i] == Stalled {
			res := Result{Run: todo[i], Before: states[i]}
			res.Summary, res.Err = ReadSummary(todo[i].Dir)
			finish(i, res)
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return rep, ErrInterrupted
	}
	var failed []string
	for _, res := range rep.Results {
		switch {
		case res.Err != nil:
			failed = append(failed, fmt.Sprintf("run %d (%s): %v", res.Run.Index, res.Run.Name, res.Err))
		case res.Before == Stalled:
			failed = append(failed, fmt.Sprintf("run %d (%s): stalled at step %d (summary.json)", res.Run.Index, res.Run.Name, res.Summary.Steps))
		}
	}
	if len(failed) > 0 {
		return rep, fmt.Errorf("%d of %d runs failed: %s", len(failed), len(todo), strings.Join(failed, "; "))
	}
	return rep, nil
}

// trainOne trains one run from its state.
func trainOne(ctx context.Context, r Run, st State, opts Options, mu *sync.Mutex) Result {
	res := Result{Run: r, Before: st}
	if ctx.Err() != nil {
		return res // not started
	}
	if opts.Started != nil {
		mu.Lock()
		opts.Started(r, st)
		mu.Unlock()
	}
	start := time.Now()
	o := opts.Run
	if st == Resumable {
		res.Summary, res.Err = experiment.Resume(ctx, r.Dir, experiment.Changes{}, o)
	} else {
		// State found no folder, or one of this configuration without a
		// checkpoint (a run killed before its first): start it afresh.
		o.Force = true
		res.Summary, res.Err = experiment.Run(ctx, r.Config, o)
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}
