package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// recorded reads the value at path of the run folder's config.json.
func recorded(t *testing.T, dir, path string) (any, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, experiment.ConfigFile))
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("config.json: %v", err)
	}
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, true
}

// oneLine reports whether a refusal is the command's one line on stderr.
func oneLine(errs string) bool {
	return strings.HasPrefix(errs, "train: ") && strings.Count(errs, "\n") == 1 && strings.HasSuffix(errs, "\n")
}

// context is a run's command line (a small graph, one step) on which the
// field at path applies: the first of a few runs, from the bigram's exact
// RLVR to the transformer's PPO, with -baseline gae for the critic's
// fields. The flag name itself is left out.
func contextFor(t *testing.T, name, path string) []string {
	t.Helper()
	runs := [][]string{
		{}, {"-lr-decay", "plateau"}, {"-trainer", "sft"}, {"-trainer", "distill", "-teacher", "rlvr-limit"}, {"-trainer", "reinforce", "-rollouts", "16"},
		{"-trainer", "ppo", "-rollouts", "16"}, {"-trainer", "grpo", "-rollouts", "16"}, {"-trainer", "ppo", "-rollouts", "16", "-baseline", "gae"},
		{"-model", "transformer", "-trainer", "ppo", "-rollouts", "16", "-dim", "4", "-context", "2", "-stride", "4", "-windows", "2", "-eval-rollouts", "4"},
	}
	for _, r := range runs {
		p, err := parseRun(r, nil)
		if err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		if !trainers.Applies(path, p.cfg.Choice()) {
			continue
		}
		args := []string{"-W", "2", "-K", "2", "-L", "2", "-steps", "1", "-checkpoint-every", "0"}
		args = append(args, r...)
		var out []string
		for i := 0; i < len(args); i += 2 {
			if args[i] != "-"+name {
				out = append(out, args[i], args[i+1])
			}
		}
		return out
	}
	t.Fatalf("-%s (%s) applies to none of the test's runs", name, path)
	return nil
}

// sameValue reports whether the JSON value got is the text given, read as
// the flag's kind reads it.
func sameValue(kind valueKind, given string, got any) bool {
	n, ok := got.(json.Number)
	if !ok {
		return false
	}
	if kind == floatValue {
		x, err1 := strconv.ParseFloat(given, 64)
		y, err2 := n.Float64()
		return err1 == nil && err2 == nil && x == y
	}
	return strings.TrimPrefix(given, "+") == n.String()
}

// TestNumericFlagsAreUsedOrRefused is the property: every numeric
// flag of train run, given on the command line and in a -config file, at
// its default, zero, a negative and a huge value, is either recorded
// exactly in config.json or refused with one line and exit 2. Each run is
// interrupted once it is set up, its folder written (no step is taken).
func TestNumericFlagsAreUsedOrRefused(t *testing.T) {
	interruptAtStart = true
	defer func() { interruptAtStart = false }()
	base := t.TempDir()
	n := 0
	for _, f := range runFlags {
		if f.kind == boolValue || f.kind == stringValue {
			continue
		}
		ctx := contextFor(t, f.name, f.path)
		p, err := parseRun(ctx, nil)
		if err != nil {
			t.Fatalf("%v: %v", ctx, err)
		}
		def, _ := valueAt(p.cfg, f.path)
		huge := map[valueKind]string{intValue: strconv.FormatInt(math.MaxInt64, 10), uintValue: strconv.FormatUint(math.MaxUint64, 10), floatValue: "1e308"}[f.kind]
		for _, v := range []string{def, "0", "-3", huge} {
			for _, form := range []string{"flag", "file"} {
				n++
				dir := filepath.Join(base, strconv.Itoa(n))
				args := append([]string{"run"}, ctx...)
				if form == "flag" {
					args = append(args, "-"+f.name, v)
				} else {
					file := filepath.Join(base, strconv.Itoa(n)+".json")
					obj := v
					segs := strings.Split(f.path, ".")
					for i := len(segs) - 1; i >= 0; i-- {
						obj = fmt.Sprintf("{%q: %s}", segs[i], obj)
					}
					if err := os.WriteFile(file, []byte(obj), 0o644); err != nil {
						t.Fatal(err)
					}
					args = append(args, "-config", file)
				}
				args = append(args, "-out", dir)
				code, _, errs := runCLI(t, args...)
				switch got, ok := recorded(t, dir, f.path); {
				case code == 2:
					if !oneLine(errs) {
						t.Errorf("%v: exit 2 with %q, want one line", args, errs)
					}
					if _, err := os.Stat(dir); err == nil {
						t.Errorf("%v: refused, yet left %s", args, dir)
					}
				case code != 130 && code != 0:
					t.Errorf("%v: exit %d (%s), want the value recorded or exit 2", args, code, errs)
				case !ok || !sameValue(f.kind, v, got):
					t.Errorf("%v: config.json records %v (%v), want %s", args, got, ok, v)
				}
			}
		}
	}
	t.Logf("%d runs", n)
}

// TestFlagsThatDoNotApplyAreRefused is the second property: every
// flag, given to every trainer on every model that trains with it, is
// refused with exit 2 and one line naming it when it does not apply to
// that run (trainers.Fields), and otherwise not refused for applying.
func TestFlagsThatDoNotApplyAreRefused(t *testing.T) {
	for _, m := range trainers.Models() {
		for _, k := range m.Kinds() {
			run := []string{"-model", string(m), "-trainer", string(k)}
			if k.UsesTeacher() {
				run = append(run, "-teacher", "rlvr-limit")
			}
			p, err := parseRun(run, nil)
			if err != nil {
				t.Fatalf("%v: %v", run, err)
			}
			ch := p.cfg.Choice()
			for _, f := range runFlags {
				if slices.Contains([]string{"model", "trainer"}, f.name) {
					continue
				}
				v := map[valueKind]string{intValue: "3", uintValue: "3", floatValue: "0.5", boolValue: "true", stringValue: "x"}[f.kind]
				args := append(slices.Clone(run), "-"+f.name+"="+v)
				_, err := parseRun(args, nil)
				na := err != nil && strings.Contains(err.Error(), "-"+f.name+": applies to ")
				if applies := trainers.Applies(f.path, ch); applies == na {
					t.Errorf("%v: %v; the field %s applies: %v", args, err, f.path, applies)
				}
				if na && (!oneLine("train: "+err.Error()+"\n") || !errors.As(err, new(usageError))) {
					t.Errorf("%v: %q, want one usage line (exit 2)", args, err)
				}
			}
		}
	}
}

// TestZeroIsUsedNotReplaced: the cases of a zero replaced by the
// default are refused with one line, or recorded as given; a config
// file's zero alike; a sweep over a learning rate of 0 is refused
// before it names a folder.
func TestZeroIsUsedNotReplaced(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "adam0.json")
	os.WriteFile(file, []byte(`{"train": {"optimizer": {"name": "adam", "lr": 0}}}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-lr", "0"}, "lr 0: want finite > 0"},
		{[]string{"-config", file}, "lr 0: want finite > 0"},
		{[]string{"-trainer", "ppo", "-rollouts", "0"}, "rollouts 0: want >= 1"},
		{[]string{"-trainer", "ppo", "-horizon-factor", "0"}, "horizon_factor 0: want in [1,"},
		{[]string{"-trainer", "grpo", "-group-size", "0"}, "group_size 0: want >= 2"},
		{[]string{"-model", "transformer", "-trainer", "ppo", "-table-lr", "0"}, "table_lr 0: want finite > 0"},
		{[]string{"-max-bytes", "0"}, "-max-bytes 0: want a budget in bytes >= 1"},
	} {
		code, _, errs := runCLI(t, append(append([]string{"run"}, tc.args...), "-out", filepath.Join(dir, "out"))...)
		if code != 2 || !oneLine(errs) || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
	spec := filepath.Join(dir, "lr.json")
	os.WriteFile(spec, []byte(`{"base": {"graph": {"W": 2, "K": 2, "L": 2}, "train": {"steps": 1}}, "grid": {"train.optimizer.lr": [0, 0.1]}}`), 0o644)
	code, _, errs := runCLI(t, "sweep", spec, "-dry-run", "-out", filepath.Join(dir, "sweep"))
	if code != 2 || !strings.Contains(errs, "run 0 (train.optimizer.lr=0)") || !strings.Contains(errs, "lr 0: want finite > 0") {
		t.Errorf("sweep over lr 0: exit %d, stderr %q; want 2 naming run 0 and lr 0", code, errs)
	}
}

// TestEmptyIsRefusedNotDefault: an empty -out or -init, whose empty value
// is the default (runs/<name>, the pretrained model), is refused with one
// line naming the flag, as is the key given empty in a -config file or a
// sweep's base, and a sweep spec's out ""; nothing is written.
func TestEmptyIsRefusedNotDefault(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("init.json", []byte(`{"init": ""}`), 0o644)
	os.WriteFile("out.json", []byte(`{"out": ""}`), 0o644)
	os.WriteFile("spec.json", []byte(`{"base": {"graph": {"W": 2, "K": 2, "L": 2}, "init": ""}, "grid": {"train.seed": [1, 2]}}`), 0o644)
	os.WriteFile("outspec.json", []byte(`{"out": "", "base": {"graph": {"W": 2, "K": 2, "L": 2}}, "grid": {"train.seed": [1, 2]}}`), 0o644)
	small := []string{"run", "-W", "3", "-K", "3", "-L", "2", "-steps", "1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(small, "-out", ""), `run: -out "": want a run folder`},
		{append(small, "-init", "", "-out", "x"), `run: -init "": want a run folder holding a bigram checkpoint`},
		{append(small, "-config", "init.json", "-out", "x"), `run: -config init.json: init "": want a run folder`},
		{append(small, "-config", "out.json"), `run: -config out.json: out "": want a run folder`},
		{[]string{"sweep", "spec.json", "-out", "s"}, `init "": want a run folder`},
		{[]string{"sweep", "outspec.json"}, `outspec.json: out "": want the sweep's folder (leave it out for runs/sweeps/outspec)`},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != 2 || !oneLine(errs) || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.args, code, out, errs, tc.want)
		}
	}
	if left, _ := os.ReadDir("."); len(left) != 4 {
		t.Errorf("the refused commands left %d entries beside the 4 files, want none: %v", len(left)-4, left)
	}
}

// TestEveryStringFlagRefusesEmpty walks the string flags of every
// subcommand as -h shows them, and train run's text fields (runFlags) on a
// run they apply to: each given "" is refused with one line and exit 2,
// naming it, before anything is written. -lr-decay "" is a schedule
// (constant), as -h says.
func TestEveryStringFlagRefusesEmpty(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	// Arguments besides the flag, refused later when it is not: the test
	// runs nothing long.
	around := map[string][]string{
		"eval": {"-W", "2", "-K", "2", "-L", "2"}, "sample": {"nope"}, "export": {"nope"}, "aggregate": {"nope"},
		"sweep": {"nope.json"}, "reproduce": {"nope"}, "run": {"-W", "2", "-K", "2", "-L", "2", "-steps", "1"},
	}
	n := 0
	for sub, flags := range shownFlags(t) {
		for name, kind := range flags {
			if kind != "string" || sub == "run" && slices.ContainsFunc(runFlags, func(f runFlag) bool { return f.name == name }) {
				continue // run's configuration flags: below, each in a run it applies to
			}
			n++
			args := append(append([]string{sub}, around[sub]...), "-"+name, "")
			code, out, errs := runCLI(t, args...)
			if want := sub + ": -" + name + ` "": want `; code != 2 || !oneLine(errs) || !strings.Contains(errs, want) || out != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line with %q", args, code, out, errs, want)
			}
		}
	}
	if n < 15 {
		t.Errorf("%d string flags shown, want at least 15 (run, eval, export, reproduce, sweep, aggregate)", n)
	}
	for _, f := range runFlags {
		if f.kind != stringValue || f.name == "lr-decay" {
			continue
		}
		args := append([]string{"run"}, contextFor(t, f.name, f.path)...)
		if f.name == "branches" { // exclusive with the context's -W -K -L
			args = []string{"run", "-steps", "1"}
		}
		args = append(args, "-out", "x", "-"+f.name, "")
		code, out, errs := runCLI(t, args...)
		field := f.path[strings.LastIndex(f.path, ".")+1:]
		if code != 2 || !oneLine(errs) || !strings.Contains(errs, f.name) && !strings.Contains(errs, field+` ""`) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line naming -%s", args, code, out, errs, f.name)
		}
	}
	if left, _ := os.ReadDir("."); len(left) != 0 {
		t.Errorf("the refused commands left %v", left)
	}
}

// TestNotApplicableNeverRecorded: config.json records only the fields that
// apply to the run: no epochs or rollouts for sft on the bigram, no
// transformer options for the bigram, no Adam constants for sign descent;
// a field that applies is recorded even at zero (kl_coef for ppo).
func TestNotApplicableNeverRecorded(t *testing.T) {
	interruptAtStart = true
	defer func() { interruptAtStart = false }()
	for _, tc := range []struct {
		args       []string
		want, none []string
	}{
		{[]string{"-trainer", "sft"}, []string{"train.supervised_backward", "train.optimizer.lr", "train.patience", "train.lr_decay"},
			[]string{"train.epochs", "train.rollouts", "train.halvings", "train.optimizer.beta1", "train.train_source", "transformer", "teacher"}},
		{[]string{"-trainer", "ppo"}, []string{"train.kl_coef", "train.entropy_coef", "train.optimizer.beta2", "train.train_source"},
			[]string{"train.group_size", "train.loss_agg", "train.lambda", "train.distill_traces", "train.supervised_backward"}},
		{[]string{"-model", "transformer", "-trainer", "sft", "-dim", "4", "-windows", "2", "-eval-rollouts", "4"}, []string{"train.rollouts", "transformer.table_lr"},
			[]string{"transformer.table_tokens", "train.supervised_backward", "train.beta"}},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"run", "-W", "2", "-K", "2", "-L", "2", "-out", dir}, tc.args...)
		if code, _, errs := runCLI(t, args...); code != 130 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		for _, p := range tc.want {
			if _, ok := recorded(t, dir, p); !ok {
				t.Errorf("%v: config.json lacks %s", tc.args, p)
			}
		}
		for _, p := range tc.none {
			if v, ok := recorded(t, dir, p); ok {
				t.Errorf("%v: config.json records %s = %v, which does not apply", tc.args, p, v)
			}
		}
	}
}

// TestIntegersAreDecimal: an integer flag is read in decimal only, as
// -branches reads its counts: -W 010 is ten, -W 0x4 and 1_000 are refused
// with one line, for train run and the other commands alike (sample's
// -n 010 draws ten rollouts).
func TestIntegersAreDecimal(t *testing.T) {
	trained := filepath.Join(t.TempDir(), "trained")
	if code, _, errs := runCLI(t, "run", "-W", "3", "-K", "3", "-L", "2", "-steps", "1", "-out", trained); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	interruptAtStart = true
	defer func() { interruptAtStart = false }()
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errs := runCLI(t, "run", "-W", "010", "-K", "2", "-L", "2", "-out", dir); code != 130 {
		t.Fatalf("-W 010: exit %d: %s", code, errs)
	}
	if w, _ := recorded(t, dir, "graph.W"); fmt.Sprint(w) != "10" {
		t.Errorf("-W 010 records W %v, want 10", w)
	}
	for _, args := range [][]string{
		{"run", "-W", "0x4"}, {"run", "-steps", "1_000"}, {"run", "-seed", "0o7"}, {"run", "-lr", "0x1p-4"}, {"run", "-until", "NaN"},
		{"eval", "-W", "0x4"}, {"eval", "-mc", "0b11"}, {"run", "-branches", "0x2,3"},
		{"sample", trained, "-n", "0x2"}, {"sample", trained, "-n", "1_0"}, {"sample", trained, "-seed", "0x10"},
		{"sample", trained, "-horizon", "0o7"}, {"sample", trained, "-target", "0x1"}, {"sample", trained, "-max-bytes", "1_000_000_000"},
		{"export", trained, "-max-bytes", "0x100000"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != 2 || !oneLine(errs) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errs)
		}
		if args[0] == "sample" || args[0] == "export" {
			if !strings.Contains(errs, "want a decimal integer") {
				t.Errorf("%v: stderr %q; want a decimal integer", args, errs)
			}
		}
	}
	code, out, _ := runCLI(t, "eval", "-W", "010", "-K", "1", "-L", "1", "-json")
	var ev map[string]any
	if json.Unmarshal([]byte(out), &ev) != nil || code != 0 || len(ev["per_target"].([]any)) != 10 {
		t.Errorf("eval -W 010: exit %d, want 10 targets", code)
	}
	rep := sampleJSON(t, trained, "-n", "010", "-horizon", "010")
	if len(rep.Rollouts) != 10 || rep.Horizon != 10 {
		t.Errorf("sample -n 010 -horizon 010: got %d rollouts, horizon %d; want 10 and 10", len(rep.Rollouts), rep.Horizon)
	}
}

// TestEveryIntegerFlagIsDecimal walks the flags of every subcommand (the
// ones the unknown-subcommand message lists) as its -h prints them: each
// is a switch, a string, or a number shown as int or float (-h shows no
// "value", the flag package's word for a type it does not know), and
// each number refuses 0x4, which the flag package's own number flags read
// as a Go literal (as they read 010 as eight).
func TestEveryIntegerFlagIsDecimal(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	around := map[string][]string{"sample": {"nope"}, "export": {"nope"}, "aggregate": {"nope"}, "sweep": {"nope.json"}, "reproduce": {"nope"}}
	n := 0
	for sub, flags := range shownFlags(t) {
		for name, kind := range flags {
			switch kind {
			case "", "string":
				continue
			case "int", "float":
			default:
				t.Errorf("%s -%s: shown as %q, want int, float, string or a switch", sub, name, kind)
				continue
			}
			n++
			args := append(append([]string{sub}, around[sub]...), "-"+name, "0x4")
			code, out, errs := runCLI(t, args...)
			if code != 2 || !oneLine(errs) || !strings.Contains(errs, "want a decimal") || out != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line with \"want a decimal\"", args, code, out, errs)
			}
		}
	}
	if n < 40 {
		t.Errorf("%d number flags shown, want at least 40", n)
	}
}

// shownFlags is every subcommand's flags (the subcommands the
// unknown-subcommand message lists, but help) with their kinds as -h shows
// them: "" for a switch, else string, int, float (or what the flag
// package shows for a type of its own or one it does not know).
func shownFlags(t *testing.T) map[string]map[string]string {
	t.Helper()
	_, _, errs := runCLI(t, "no-such-subcommand")
	_, list, _ := strings.Cut(errs, ": want ")
	list, _, ok := strings.Cut(list, " (")
	if !ok {
		t.Fatalf("no subcommand list in %q", errs)
	}
	subs := strings.FieldsFunc(strings.ReplaceAll(list, " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
	if !slices.Contains(subs, "sample") || !slices.Contains(subs, "export") {
		t.Fatalf("subcommands %q from %q: want sample and export among them", subs, errs)
	}
	all := map[string]map[string]string{}
	for _, sub := range subs {
		if sub == "help" {
			continue
		}
		code, out, errs := runCLI(t, sub, "-h")
		if code != 0 {
			t.Fatalf("%s -h: exit %d: %s", sub, code, errs)
		}
		all[sub] = map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if !strings.HasPrefix(line, "  -") || len(f) > 2 {
				continue
			}
			all[sub][f[0][1:]] = strings.Join(f[1:], "")
		}
		if len(all[sub]) == 0 {
			t.Errorf("%s -h lists no flags:\n%s", sub, out)
		}
	}
	return all
}

// TestResumeHintWorks: the README's train run -resume DIR -steps N on a run
// its -until stopped says why nothing changes and which command trains on;
// that command trains to step N; the plain command that made the run then
// still finds its run (nothing to do), and one asking for fewer steps than
// the resume took is refused with one line saying how to go on.
func TestResumeHintWorks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	plain := []string{"run", "-W", "3", "-K", "2", "-L", "2", "-out", dir}
	if code, _, errs := runCLI(t, plain...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	first := readJSON(t, filepath.Join(dir, "summary.json"))
	steps := int(first["steps"].(float64))
	if first["stop_reason"] != "until" || steps >= 500 {
		t.Fatalf("the run stopped %v at step %d, want until before 500", first["stop_reason"], steps)
	}
	code, out, errs := runCLI(t, "run", "-resume", dir, "-steps", "500")
	hint := "train run -resume " + dir + " -until 0 -steps 500"
	if code != 0 || !strings.Contains(out, "which -steps 500 does not change") || !strings.Contains(out, hint) {
		t.Fatalf("resume -steps 500: exit %d, stdout %q, stderr %q; want the hint %q", code, out, errs, hint)
	}
	code, _, errs = runCLI(t, strings.Fields(hint)[1:]...)
	s := readJSON(t, filepath.Join(dir, "summary.json"))
	if code != 0 || s["steps"].(float64) != 500 || s["stop_reason"] != "steps" {
		t.Fatalf("%s: exit %d (%s), steps %v, stop %v; want 500 steps", hint, code, errs, s["steps"], s["stop_reason"])
	}
	code, out, errs = runCLI(t, plain...)
	if code != 0 || !strings.Contains(out, "already holds this run, finished: nothing to do") {
		t.Errorf("the plain command again: exit %d, stdout %q, stderr %q; want nothing to do", code, out, errs)
	}
	code, _, errs = runCLI(t, append(plain, "-steps", "100")...)
	if code != 2 || !oneLine(errs) || !strings.Contains(errs, "train run -resume "+dir) {
		t.Errorf("fewer steps than the resume took: exit %d, stderr %q; want 2 and the way on", code, errs)
	}
}

// fieldTable is the manual's table of the fields that do not apply to
// every run (trainers.Fields), grouped by the runs they apply to, each
// with its flag, ending with the line for the others.
func fieldTable() string {
	var order []string
	groups := map[string][]string{}
	for _, f := range trainers.Fields {
		if f.To == "every run" {
			continue
		}
		if _, ok := groups[f.To]; !ok {
			order = append(order, f.To)
		}
		item := f.Key
		if name := flagFor(f.Key); name != "" {
			item += " (-" + name + ")"
		}
		groups[f.To] = append(groups[f.To], item)
	}
	var b strings.Builder
	for _, to := range order {
		b.WriteString("  " + to + ":\n")
		line := "     "
		for i, item := range groups[to] {
			if i < len(groups[to])-1 {
				item += ","
			}
			if len(line)+1+len(item) > 80 {
				b.WriteString(line + "\n")
				line = "     "
			}
			line += " " + item
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("  every other field applies to every run.\n")
	return b.String()
}

// TestManualListsWhichFieldsApply: the manual's table of which fields
// apply to which runs is the applicability table's (-update rewrites it
// in manual.txt; a second -update run then regenerates doc.go).
func TestManualListsWhichFieldsApply(t *testing.T) {
	want := fieldTable()
	const after = "config.json records only the fields that apply:\n"
	const last = "  every other field applies to every run.\n"
	i := strings.Index(manual, after)
	j := strings.Index(manual, last)
	if i < 0 || j < i {
		t.Fatalf("manual.txt has no table of the fields (a paragraph ending %q, then the table)", after)
	}
	got := manual[i+len(after) : j+len(last)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile("manual.txt", []byte(manual[:i+len(after)]+want+manual[j+len(last):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("manual.txt's table of fields differs from trainers.Fields (go test -run TestManualListsWhichFieldsApply -update); want:\n%s", want)
}

// TestHugeValuesRefused: values too large for the run are refused at once
// with one line, before any work: a prime width with two heads (its
// divisors were searched one by one), a window of 2^63-1 positions (its
// memory estimate wrapped negative), teacher traces beyond the budget.
func TestHugeValuesRefused(t *testing.T) {
	tf := []string{"-model", "transformer", "-trainer", "ppo", "-W", "2", "-K", "2", "-L", "2"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(tf, "-dim", "2305843009213693951", "-heads", "2"), "heads can be 1"},
		{append(tf, "-stride", "9223372036854775807"), "GiB"},
		{[]string{"-trainer", "distill", "-teacher", "rlvr-limit", "-W", "2", "-K", "2", "-L", "2", "-distill-traces", "9223372036854775807"}, "distill_traces 9223372036854775807"},
	} {
		code, _, errs := runCLI(t, append(append([]string{"run"}, tc.args...), "-out", filepath.Join(t.TempDir(), "out"))...)
		if code != 2 || !oneLine(errs) || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestFlagDefaultsShownAgreeWithRuns: a default -h shows is the one every
// run it applies to takes. lr_decay is "" (a constant rate) for the exact
// and supervised trainers and plateau for the sampled ones, so -h shows
// none; "" once counted as "not seen yet" and -h said plateau. GAE's
// lambda and critic rate apply to no default run: -h reads them from the
// runs with baseline gae, and shows them.
func TestFlagDefaultsShownAgreeWithRuns(t *testing.T) {
	d := flagDefaults()
	if v, ok := d["train.lr_decay"]; ok {
		t.Errorf("-lr-decay shows default %q; the runs' defaults differ", v)
	}
	for path, want := range map[string]string{"train.lambda": "0.95", "train.critic_rate": "0.5"} {
		if got := d[path]; got != want {
			t.Errorf("-h shows %s default %q, want %q", path, got, want)
		}
	}
	for _, c := range defaultRuns() {
		for path, want := range d {
			if !trainers.Applies(path, c.Choice()) {
				continue
			}
			if got, ok := valueAt(c, path); !ok || got != want {
				t.Errorf("%s: %s is %q, -h shows %q", c.Choice(), path, got, want)
			}
		}
	}
}
