// Command traceidle reads a Go execution trace as `go tool trace
// -d=parsed` prints it and says how long 0, 1, 2, ... goroutines were
// running at once over the trace's last -last seconds (all of it when 0);
// the same within each kind of region the code marked (the trainers mark
// each step's phases: sampling, the update and its passes, measurement);
// and, for the time exactly one ran, which goroutines those were, by
// where they were started (their start function and the first frames of
// the code that started them). On a machine of GOMAXPROCS cores, the time
// with fewer running is a core left idle. docs/speed.md uses it on traces
// of transformer PPO steps:
//
//	go test ./trainers -run '^$' -bench 'TransformerPPOStep/W15K15L5' -benchtime 2x -trace step.trace
//	go tool trace -d=parsed step.trace | go run ./docs/traceidle
//
// or of a few steps of a run (train -trace FILE run ... -steps 3). With
// -lag SITE it also gives how long the goroutines started at SITE (a
// substring of the site it lists) waited from their start to their first
// run, those started inside a region of kind -within only when that is
// given: for a parallel loop's parts, how long each waited for a core.
// The format read is the debug output of Go 1.26's trace tool, not a
// stable interface.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// transition is one goroutine's state change at time t (ns).
type transition struct {
	t        int64
	g        int
	from, to string
	site     string // for a creation: where the goroutine starts and who started it
}

// span is one region's time on its goroutine, [from, to) ns.
type span struct {
	kind     string
	from, to int64
}

var (
	transitionRE = regexp.MustCompile(`^M=-?\d+ P=-?\d+ G=-?\d+ StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)`)
	regionRE     = regexp.MustCompile(`^M=-?\d+ P=-?\d+ G=(-?\d+) Region(Begin|End) Time=(\d+) .*Type="(.*)"`)
)

func main() {
	var o options
	flag.Float64Var(&o.last, "last", 0, "seconds at the end of the trace to read (0: all of it)")
	flag.IntVar(&o.top, "top", 8, "goroutine sites to list")
	flag.StringVar(&o.lag, "lag", "", "the start delays of the goroutines started at a site containing this")
	flag.StringVar(&o.within, "within", "", "with -lag: only those started inside a region of this kind")
	flag.Parse()
	if o.last < 0 || o.top < 0 || flag.NArg() > 0 || (o.within != "" && o.lag == "") {
		fmt.Fprintln(os.Stderr, "traceidle: usage: go tool trace -d=parsed FILE | traceidle [-last SECONDS] [-top N] [-lag SITE [-within REGION]]")
		os.Exit(2)
	}
	if err := report(os.Stdout, os.Stdin, o); err != nil {
		fmt.Fprintln(os.Stderr, "traceidle:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	last        float64
	top         int
	lag, within string
}

// report reads the parsed trace from r and writes the split to w.
func report(w io.Writer, r io.Reader, o options) error {
	ts, spans, err := parse(r)
	if err != nil {
		return err
	}
	if len(ts) == 0 {
		return fmt.Errorf("no goroutine transitions in the input (want `go tool trace -d=parsed FILE`)")
	}
	slices.SortStableFunc(ts, func(a, b transition) int { return int(a.t - b.t) })
	from := ts[0].t
	if o.last > 0 {
		from = max(from, ts[len(ts)-1].t-int64(o.last*1e9))
	}
	site := map[int]string{}
	running := map[int]bool{}
	byCount := map[int]int64{}
	alone := map[string]int64{}
	var steps []step // the running count over time
	prev := ts[0].t
	for _, tr := range ts {
		if tr.t > from {
			d := tr.t - max(prev, from)
			byCount[len(running)] += d
			if len(running) == 1 {
				for g := range running {
					alone[siteOf(site, g)] += d
				}
			}
		}
		if len(steps) == 0 || steps[len(steps)-1].n != len(running) {
			steps = append(steps, step{t: prev, n: len(running)})
		}
		prev = tr.t
		if tr.site != "" {
			site[tr.g] = tr.site
		}
		switch {
		case tr.to == "Running":
			running[tr.g] = true
		case tr.from == "Running":
			delete(running, tr.g)
		}
	}
	total := ts[len(ts)-1].t - from
	fmt.Fprintf(w, "%.1f ms read\n", float64(total)/1e6)
	for n := 0; n <= maxKey(byCount); n++ {
		fmt.Fprintf(w, "%d running: %8.1f ms (%4.1f%%)\n", n, float64(byCount[n])/1e6, 100*float64(byCount[n])/float64(total))
	}
	printRegions(w, spans, steps, from, ts[len(ts)-1].t, maxKey(byCount))
	fmt.Fprintln(w, "one running, by where it was started:")
	sites := make([]string, 0, len(alone))
	for s := range alone {
		sites = append(sites, s)
	}
	slices.SortFunc(sites, func(a, b string) int { return int(alone[b] - alone[a]) })
	for _, s := range sites[:min(o.top, len(sites))] {
		fmt.Fprintf(w, "%8.1f ms  %s\n", float64(alone[s])/1e6, s)
	}
	if o.lag != "" {
		printLags(w, ts, spans, from, o.lag, o.within)
	}
	return nil
}

// printLags prints the distribution of the start delays (creation to
// first run) of the goroutines created from from on at a site containing
// lag, inside a region of kind within when that is not empty.
func printLags(w io.Writer, ts []transition, spans []span, from int64, lag, within string) {
	created := map[int]int64{}
	var lags []int64
	for _, tr := range ts {
		switch {
		case tr.from == "NotExist" && tr.t >= from && strings.Contains(tr.site, lag) && inside(spans, within, tr.t):
			created[tr.g] = tr.t
		case tr.to == "Running":
			if t0, ok := created[tr.g]; ok {
				lags = append(lags, tr.t-t0)
				delete(created, tr.g)
			}
		}
	}
	where := ""
	if within != "" {
		where = fmt.Sprintf(" inside %q", within)
	}
	if len(lags) == 0 {
		fmt.Fprintf(w, "no goroutines started at %q%s\n", lag, where)
		return
	}
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / 1e3 }
	fmt.Fprintf(w, "start delay of the %d goroutines started at %q%s: median %.1f us, 75th percentile %.1f, 90th %.1f, largest %.1f\n",
		len(lags), lag, where, q(0.5), q(0.75), q(0.9), q(1))
}

// inside says whether t falls in a region of kind (any t when kind is empty).
func inside(spans []span, kind string, t int64) bool {
	if kind == "" {
		return true
	}
	for _, sp := range spans {
		if sp.kind == kind && sp.from <= t && t < sp.to {
			return true
		}
	}
	return false
}

// step is the number of goroutines running from t on.
type step struct {
	t int64
	n int
}

// printRegions prints, for each kind of region, its instances, their wall
// time within [from, to) and its split by the number of goroutines running.
func printRegions(w io.Writer, spans []span, steps []step, from, to int64, most int) {
	if len(spans) == 0 {
		return
	}
	type total struct {
		n    int
		wall int64
		by   []int64
	}
	totals := map[string]*total{}
	var kinds []string
	for _, sp := range spans {
		a, b := max(sp.from, from), min(sp.to, to)
		if b <= a {
			continue
		}
		tt := totals[sp.kind]
		if tt == nil {
			tt = &total{by: make([]int64, most+1)}
			totals[sp.kind] = tt
			kinds = append(kinds, sp.kind)
		}
		tt.n++
		tt.wall += b - a
		i, _ := slices.BinarySearchFunc(steps, a, func(s step, t int64) int { return int(s.t - t) })
		if i == len(steps) || steps[i].t > a {
			i--
		}
		for ; i >= 0 && i < len(steps) && steps[i].t < b; i++ {
			lo, hi := max(a, steps[i].t), b
			if i+1 < len(steps) {
				hi = min(hi, steps[i+1].t)
			}
			if hi > lo {
				tt.by[min(steps[i].n, most)] += hi - lo
			}
		}
	}
	slices.SortFunc(kinds, func(a, b string) int { return int(totals[b].wall - totals[a].wall) })
	fmt.Fprintf(w, "by region: instances, wall ms, and its share with 0, 1, ... running\n")
	for _, k := range kinds {
		tt := totals[k]
		fmt.Fprintf(w, "%-24s %5d %9.1f ms", k, tt.n, float64(tt.wall)/1e6)
		for n, d := range tt.by {
			fmt.Fprintf(w, "  %d: %4.1f%%", n, 100*float64(d)/float64(tt.wall))
		}
		fmt.Fprintln(w)
	}
}

func siteOf(site map[int]string, g int) string {
	if s, ok := site[g]; ok {
		return s
	}
	return "started before the trace"
}

func maxKey(m map[int]int64) int {
	k := 0
	for n := range m {
		k = max(k, n)
	}
	return k
}

// parse reads the goroutine transitions of `go tool trace -d=parsed`
// output; a creation (from NotExist) gets its site from the frames that
// follow it: its TransitionStack (the new goroutine's start) and its Stack
// (the creator's).
func parse(r io.Reader) ([]transition, []span, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ts []transition
	var spans []span
	open := map[string][]int64{} // goroutine and kind: the begin times of the regions open
	cur := -1                    // index in ts of the creation whose frames are being read
	var frames []string
	flush := func() {
		if cur >= 0 {
			ts[cur].site = strings.Join(frames[:min(4, len(frames))], " < ")
		}
		cur, frames = -1, frames[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		if m := transitionRE.FindStringSubmatch(line); m != nil {
			flush()
			t, _ := strconv.ParseInt(m[1], 10, 64)
			g, _ := strconv.Atoi(m[2])
			ts = append(ts, transition{t: t, g: g, from: m[3], to: m[4]})
			if m[3] == "NotExist" {
				cur = len(ts) - 1
			}
			continue
		}
		if m := regionRE.FindStringSubmatch(line); m != nil {
			flush()
			t, _ := strconv.ParseInt(m[3], 10, 64)
			key := m[1] + " " + m[4]
			if m[2] == "Begin" {
				open[key] = append(open[key], t)
			} else if n := len(open[key]); n > 0 {
				spans = append(spans, span{kind: m[4], from: open[key][n-1], to: t})
				open[key] = open[key][:n-1]
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "\t\t"): // a frame's file and line
		case strings.HasPrefix(line, "\t"):
			if cur >= 0 {
				frames = append(frames, strings.TrimSpace(strings.SplitN(line, " @", 2)[0]))
			}
		case line == "" || strings.HasSuffix(line, "Stack="):
		default:
			flush()
		}
	}
	flush()
	return ts, spans, sc.Err()
}
