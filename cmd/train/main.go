package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// usageError marks bad input: the command exits 2 after a one-line message.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// warner writes one-line warnings to w ("train: warning: ..."), one at a
// time: a sweep's runs share it.
func warner(w io.Writer) func(msg string) {
	var mu sync.Mutex
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "train: warning: %s\n", msg)
	}
}

func main() {
	tuneGC(os.Getenv)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// gcPercent is the collector's GOGC that train runs with unless the
// environment sets GOGC: the heap grows to 1.5 times its live data before
// a collection, not Go's default of twice. A sampled run's live heap is
// its largest batch's buffers, kept from step to step (about 93 bytes a
// token for the transformer at the paper's size), and each step leaves
// some garbage, so at GOGC=100 its peak is about twice that batch. Its
// large buffers hold no pointers, so a collection has little to mark: the
// transformer's first 12 PPO steps at the paper's size peaked at 1.49-1.63
// GiB (1.60-1.75 GB) against 2.31-2.43 GiB (2.48-2.61 GB) at GOGC=100, in
// no more CPU time (docs/speed.md).
const gcPercent = 50

// tuneGC sets the collector to gcPercent unless getenv("GOGC") is set (the
// user's setting stands, as does a GOMEMLIMIT beside either).
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// run dispatches a subcommand and returns the process exit code: 0 on
// success, 2 on bad input, 1 on any other failure. The error is printed on
// one line (singleLine).
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "train: %s\n", singleLine(err.Error()))
	var in interrupted
	var sig signalled
	switch {
	case errors.As(err, &in):
		return 128 + int(in.sig)
	case errors.As(err, &sig):
		return 128 + int(sig.sig)
	case errors.As(err, new(usageError)):
		return 2
	}
	return 1
}

// singleLine escapes the control characters of a message (as Go's %q does: a
// line break in a flag's name or a path is printed \n), so that an error
// stays one line whatever the input it names.
func singleLine(msg string) string {
	if !strings.ContainsFunc(msg, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) {
		return msg
	}
	var b strings.Builder
	for _, r := range msg {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

var errHelp = errors.New("help shown")

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		flag := args[0]
		if strings.HasPrefix(flag, "--") {
			flag = flag[1:]
		}
		if flag == "-cpuprofile" || flag == "-trace" {
			if len(args) < 2 {
				return usagef("%s: want a file name", flag)
			}
			return recording(flag, args[1], args[2:], stdout, stderr)
		}
	}
	if len(args) == 0 {
		return runDefault(stdout, stderr)
	}
	switch args[0] {
	case "eval":
		return runEval(args[1:], stdout, stderr)
	case "run":
		return runRun(args[1:], stdout, stderr)
	case "sample":
		return runSample(args[1:], stdout, stderr)
	case "export":
		return runExport(args[1:], stdout, stderr)
	case "reproduce":
		return runReproduce(args[1:], stdout, stderr)
	case "sweep":
		return runSweep(args[1:], stdout, stderr)
	case "aggregate":
		return runAggregate(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, manual)
		return nil
	}
	return usagef("unknown subcommand %q: want run, eval, sample, export, reproduce, sweep, aggregate or help (no arguments runs the paper's headline experiment)", args[0])
}

// recording runs the command in args (none: the headline experiment) while
// a recorder writes to file: flag -cpuprofile's CPU profile (for go tool
// pprof), or flag -trace's execution trace (for go tool trace; the
// trainers mark each step's phases in it as regions, which docs/traceidle
// splits the cores' use by).
func recording(flag, file string, args []string, stdout, stderr io.Writer) (err error) {
	start, stop := pprof.StartCPUProfile, pprof.StopCPUProfile
	if flag == "-trace" {
		start, stop = trace.Start, trace.Stop
	}
	f, err := os.Create(file)
	if err != nil {
		return usagef("%s: %v", flag, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", flag, cerr)
		}
	}()
	if err := start(f); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	defer stop()
	return dispatch(args, stdout, stderr)
}
