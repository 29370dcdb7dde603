package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// usageError marks bad input: the command exits 2 after a one-line message.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the process exit code: 0 on
// success, 2 on bad input, 1 on any other failure.
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, new(interrupted)):
		var in interrupted
		errors.As(err, &in)
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 128 + int(in.sig)
	case errors.As(err, new(signalled)):
		var sig signalled
		errors.As(err, &sig)
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 128 + int(sig.sig)
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 1
	}
}

var errHelp = errors.New("help shown")

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-cpuprofile" || args[0] == "--cpuprofile") {
		if len(args) < 2 {
			return usagef("-cpuprofile: want a file name")
		}
		return profiled(args[1], args[2:], stdout, stderr)
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

// profiled runs the command in args (none: the headline experiment) with a
// CPU profile written to file, for go tool pprof.
func profiled(file string, args []string, stdout, stderr io.Writer) (err error) {
	f, err := os.Create(file)
	if err != nil {
		return usagef("-cpuprofile: %v", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("-cpuprofile: %w", cerr)
		}
	}()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	defer pprof.StopCPUProfile()
	return dispatch(args, stdout, stderr)
}
