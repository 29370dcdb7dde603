package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// newFlagSet makes a flag set whose errors come back as one-line usage
// errors; -h prints the subcommand's flags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors are reported in one line by parse
	return fs
}

// printUsage lists the flags of fs on w, as the flag package does, with
// the kind of each of this tool's flags (int, float, string) where the
// flag package, which knows only its own types, writes "value".
func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: train %s [flags]\n", fs.Name())
	printFlags(fs, w)
}

// printFlags is printUsage's list of flags.
func printFlags(fs *flag.FlagSet, w io.Writer) {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, after, _ := strings.Cut(rest, " ")
			if f := fs.Lookup(name); f != nil && (after == "value\n" || strings.HasPrefix(after, "value\t")) {
				if k, ok := kindOf(f.Value); ok {
					line = "  -" + name + " " + k.argName() + strings.TrimPrefix(after, "value")
				}
			}
		}
		io.WriteString(w, line)
	}
}

// kindOf is how this tool's flag value v reads its text.
func kindOf(v flag.Value) (valueKind, bool) {
	switch v := v.(type) {
	case decimal:
		return v.kind, true
	case *pathValue:
		return v.kind, v.kind != boolValue
	}
	return 0, false
}

// parse parses args, turning flag errors into one-line usage errors; -h
// prints the flags on stdout. Arguments after the flags are refused.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags only; see train %s -h)", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
}

// parseMixed parses a subcommand whose flags and positional arguments may
// come in any order (train aggregate DIR -out X DIR2, train reproduce
// -quick fig3-4, train sweep -jobs 2 SPEC.json) and returns the positional
// ones. A lone "-" is a positional argument, as for the flag package.
func parseMixed(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		for len(args) > 0 && (args[0] == "-" || !strings.HasPrefix(args[0], "-")) {
			pos, args = append(pos, args[0]), args[1:]
		}
		if len(args) == 0 {
			return pos, nil
		}
		if err := parseFlags(fs, args, stdout); err != nil {
			return nil, err
		}
		args = fs.Args()
	}
}

// parseFlags is parse for a subcommand that takes the arguments after the
// flags itself (fs.Args()). Integer flags are decimal (decimalFlags).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	decimalFlags(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			printUsage(fs, stdout)
			return errHelp
		}
		return usagef("%s: %v (see train %s -h)", fs.Name(), err, fs.Name())
	}
	return nil
}

// decimalFlags makes the integer flags of fs read decimal integers only,
// as train run's do (valueKind): the flag package reads Go literals, so
// -W 010 was 8 and -W 0x4 was 4, while -branches "0x2,3" is refused.
func decimalFlags(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if _, done := f.Value.(decimal); !ok || done {
			return
		}
		switch g.Get().(type) {
		case int, int64:
			f.Value = decimal{g, intValue}
		case uint, uint64:
			f.Value = decimal{g, uintValue}
		}
	})
}

// decimal is an integer flag.Value that reads decimal text only.
type decimal struct {
	flag.Getter
	kind valueKind
}

func (d decimal) Set(s string) error {
	j, err := d.kind.parse(s)
	if err != nil {
		return err
	}
	return d.Getter.Set(string(j))
}

func (d decimal) String() string {
	if d.Getter == nil { // the zero value, for flag.PrintDefaults
		return "0"
	}
	return d.Getter.String()
}

// refuseEmpty refuses the string flags of fs named in want when given
// empty (-out ""): the flag package takes "", which for these flags is the
// default, so the value given would be replaced by it. want says what each
// flag takes.
func refuseEmpty(fs *flag.FlagSet, want map[string]string) error {
	var err error
	fs.Visit(func(f *flag.Flag) { // lexical order: the message is deterministic
		if w, ok := want[f.Name]; ok && err == nil && f.Value.String() == "" {
			err = usagef("%s: -%s \"\": want %s", fs.Name(), f.Name, w)
		}
	})
	return err
}

// graphFlags are the world-graph flags shared by the subcommands.
type graphFlags struct {
	w, k, l  int
	branches string
	maxBytes int64
}

// defaultMaxBytes is the memory budget when -max-bytes is not given: three
// quarters of the machine's memory, or tasks.DefaultMaxBytes if unknown.
func defaultMaxBytes() int64 {
	if m := machineMemory(); m > 0 {
		return m / 4 * 3
	}
	return tasks.DefaultMaxBytes
}

func (g *graphFlags) register(fs *flag.FlagSet, def tasks.Config) {
	g.branches = tasks.FormatBranches(def.Branches)
	fs.IntVar(&g.w, "W", def.W, "number of branches W (>= 1)")
	fs.IntVar(&g.k, "K", def.K, "diamonds per branch K (>= 1)")
	fs.IntVar(&g.l, "L", def.L, "multiedges per diamond L (>= 1)")
	fs.Int64Var(&g.maxBytes, "max-bytes", def.MaxBytes, "memory budget in bytes: larger graphs are refused up front (default: 3/4 of the machine's memory)")
	fs.StringVar(&g.branches, "branches", g.branches, `heterogeneous graph, e.g. "2,2,3;5,1": ';' between branches, ',' between the diamonds' multiedge counts (instead of -W -K -L)`)
}

// config resolves the flags into a validated graph configuration.
func (g *graphFlags) config(fs *flag.FlagSet) (tasks.Config, error) {
	budget, err := resolveBudget(fs, g.maxBytes)
	if err != nil {
		return tasks.Config{}, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c := tasks.Config{W: g.w, K: g.k, L: g.l, MaxBytes: budget}
	if set["branches"] && g.branches == "" {
		return c, usagef(`%s: -branches "": want a branch spec such as "2,2,3;5,1"`, fs.Name())
	}
	if g.branches != "" {
		if set["W"] || set["K"] || set["L"] {
			return c, usagef("%s: -branches and -W/-K/-L are exclusive: give one shape", fs.Name())
		}
		b, err := tasks.ParseBranches(g.branches)
		if err != nil {
			return c, usagef("%s: -branches: %v", fs.Name(), strings.TrimPrefix(err.Error(), "tasks: "))
		}
		c = tasks.Config{Branches: b, MaxBytes: budget}
	}
	if err := c.Validate(); err != nil {
		return c, usagef("%s: %v", fs.Name(), strings.TrimPrefix(err.Error(), "tasks: "))
	}
	return c, nil
}
