// Command schedwait reads `perf sched timehist` output and says how long
// the threads of one program, once woken, waited in a run queue while
// another CPU sat idle: the time a core was left unused though there was
// work for it, which no Go trace can show (the runtime sees the thread
// as running once it asked the kernel to run it). docs/speed.md uses it
// on a transformer update:
//
//	perf sched record -o sched.data ./trainers.test -test.run '^$' -test.bench 'TransformerUpdate/W15K15L5' -test.benchtime 2x
//	perf sched timehist -i sched.data | go run ./docs/schedwait -task trainers.test
//
// Each line of timehist is a thread switched out of a CPU at a time,
// with its wait, its scheduling delay (from its wake-up to its run) and
// its run time (all ms); <idle> lines are a CPU's idle spells. For every
// thread whose task name contains -task, schedwait counts its delays
// over -min ms and how much of each another CPU spent idle, per thread
// and in all. The format read is perf 6's, not a stable interface.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// spell is a span [from, to) in seconds.
type spell struct{ from, to float64 }

// wait is one thread's scheduling delay on a CPU.
type wait struct {
	cpu  int
	task string
	at   spell
}

// thread is one thread's totals.
type thread struct {
	switches              int
	run, delay, longDelay float64 // ms
	longWaits             int
	otherIdle             float64 // ms of its long waits with another CPU idle
}

func main() {
	task := flag.String("task", "", "count the threads whose task name contains this (required)")
	minMS := flag.Float64("min", 0.2, "count delays longer than this many ms")
	flag.Parse()
	if *task == "" || *minMS < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "schedwait: usage: perf sched timehist -i FILE | schedwait -task NAME [-min MS]")
		os.Exit(2)
	}
	if err := report(os.Stdout, os.Stdin, *task, *minMS); err != nil {
		fmt.Fprintln(os.Stderr, "schedwait:", err)
		os.Exit(1)
	}
}

// report reads timehist from r and writes the counts to w.
func report(w io.Writer, r io.Reader, task string, minMS float64) error {
	idle := map[int][]spell{}
	threads := map[string]*thread{}
	var waits []wait
	lines := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Contains(sc.Text(), "awakened:") {
			continue
		}
		t, err := strconv.ParseFloat(f[0], 64)
		if err != nil || !strings.HasPrefix(f[1], "[") {
			continue
		}
		cpu, err := strconv.Atoi(strings.Trim(f[1], "[]"))
		if err != nil {
			continue
		}
		var v [3]float64 // wait, delay, run (ms): the last three fields
		ok := true
		for i := range v {
			if v[i], err = strconv.ParseFloat(f[len(f)-3+i], 64); err != nil {
				ok = false
			}
		}
		if !ok {
			continue
		}
		lines++
		start := t - v[2]/1e3
		switch name := f[2]; {
		case name == "<idle>":
			idle[cpu] = append(idle[cpu], spell{start, t})
		case strings.Contains(name, task):
			th := threads[name]
			if th == nil {
				th = &thread{}
				threads[name] = th
			}
			th.switches++
			th.run += v[2]
			th.delay += v[1]
			if v[1] > minMS {
				th.longWaits++
				th.longDelay += v[1]
				waits = append(waits, wait{cpu, name, spell{start - v[1]/1e3, start}})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if lines == 0 {
		return fmt.Errorf("no switch lines in the input (want `perf sched timehist -i FILE`)")
	}
	if len(threads) == 0 {
		return fmt.Errorf("no thread of a task containing %q", task)
	}
	for _, wt := range waits {
		threads[wt.task].otherIdle += 1e3 * idleElsewhere(idle, wt.cpu, wt.at)
	}
	names := make([]string, 0, len(threads))
	for n := range threads {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(a, b) })
	var all thread
	fmt.Fprintf(w, "thread: switches, run ms, delay ms; delays over %g ms: count, ms, ms with another CPU idle\n", minMS)
	for _, n := range names {
		th := threads[n]
		fmt.Fprintf(w, "%s: %d, %.1f, %.1f; %d, %.1f, %.1f\n", n, th.switches, th.run, th.delay, th.longWaits, th.longDelay, th.otherIdle)
		all.switches += th.switches
		all.run += th.run
		all.delay += th.delay
		all.longWaits += th.longWaits
		all.longDelay += th.longDelay
		all.otherIdle += th.otherIdle
	}
	fmt.Fprintf(w, "all %d threads: %d, %.1f, %.1f; %d, %.1f, %.1f\n", len(names), all.switches, all.run, all.delay, all.longWaits, all.longDelay, all.otherIdle)
	return nil
}

// idleElsewhere is the time of span s (seconds) during which some CPU
// other than cpu was idle: the union of their idle spells, cut to s.
func idleElsewhere(idle map[int][]spell, cpu int, s spell) float64 {
	var in []spell
	for c, sp := range idle {
		if c == cpu {
			continue
		}
		for _, x := range sp {
			if x.to > s.from && x.from < s.to {
				in = append(in, spell{max(x.from, s.from), min(x.to, s.to)})
			}
		}
	}
	slices.SortFunc(in, func(a, b spell) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return 0
	})
	total, end := 0.0, s.from
	for _, x := range in {
		if x.to <= end {
			continue
		}
		total += x.to - max(x.from, end)
		end = x.to
	}
	return total
}
