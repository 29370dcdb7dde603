package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEvalJSON(t *testing.T) {
	code, out, errs := runCLI(t, "eval", "-W", "3", "-K", "2", "-L", "2", "-policy", "pretrained", "-json", "-mc", "20000", "-seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"hitting_time", "per_target", "abcd", "theory", "states", "mc_hitting_time", "mc_hitting_time_ci95"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	if got := obj["hitting_time"].(float64); math.Abs(got-140) > 1e-9 {
		t.Errorf("hitting_time: got %v, want H_0 = 140", got)
	}
	mc, ci := obj["mc_hitting_time"].(float64), obj["mc_hitting_time_ci95"].(float64)
	if math.Abs(mc-140) > 2*ci {
		t.Errorf("mc_hitting_time %v ± %v, exact 140", mc, ci)
	}
	if n := len(obj["per_target"].([]any)); n != 3 {
		t.Errorf("per_target: got %d entries, want 3", n)
	}
	if n := len(obj["abcd"].([]any)); n != 6 {
		t.Errorf("abcd: got %d rows, want W*K = 6", n)
	}
}

func TestBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "-W", "0"}, "W=0"},
		{[]string{"eval", "-L", "-3"}, "L=-3"},
		{[]string{"eval", "-branches", "2,,3"}, "-branches"},
		{[]string{"eval", "-branches", "2;x"}, "-branches"},
		{[]string{"eval", "-branches", "2", "-W", "3"}, "exclusive"},
		{[]string{"eval", "-bogus"}, "-bogus"},
		{[]string{"eval", "-policy", "foo"}, "-policy"},
		{[]string{"eval", "-mc", "1"}, "-mc"},
		{[]string{"eval", "extra"}, "unexpected argument"},
		{[]string{"eval", "-W", "100000", "-K", "100000"}, "too large"},
		{[]string{"frob"}, "unknown subcommand"},
		{[]string{"-cpuprofile"}, "-cpuprofile: want a file name"},
		{[]string{"-trace"}, "-trace: want a file name"},
		{[]string{"-trace", filepath.Join(t.TempDir(), "no", "such", "folder", "x.trace"), "eval"}, "-trace"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and one line containing %q", tc.args, code, errs, out, tc.want)
		}
	}
}

// TestTraceMarksPhases: train -trace writes an execution trace of the
// command in which a sampled run's phases are regions: their names are in
// the trace's string table (go tool trace and docs/traceidle read them).
// The names are not substrings of the code's function or file names,
// which the trace's stacks also hold.
func TestTraceMarksPhases(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "run.trace")
	code, _, errs := runCLI(t, "-trace", file, "run", "-model", "transformer", "-trainer", "ppo", "-W", "3", "-K", "3", "-L", "2", "-steps", "2", "-out", filepath.Join(dir, "run"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sampling", "advantages and returns", "policy update", "table pass", "windows pass", "table wait", "ratio replay", "measurement"} {
		if !bytes.Contains(b, []byte(name)) {
			t.Errorf("the trace (%d bytes) has no region %q", len(b), name)
		}
	}
}

// TestEvalOptimum: train eval -json reports each setting's exact optimum
// of RLVR (the numbers, to 1e-7 relative) with its policy and a
// certificate that holds.
func TestEvalOptimum(t *testing.T) {
	for _, tc := range []struct {
		graph  []string
		source bool
		want   float64
		first  float64
	}{
		{[]string{"-W", "5", "-K", "5", "-L", "3"}, true, 97, 1},
		{[]string{"-W", "5", "-K", "5", "-L", "3"}, false, 99, 0},
		{[]string{"-W", "15", "-K", "15", "-L", "5"}, true, 729 + 8*math.Sqrt(406), 1},
		{[]string{"-W", "15", "-K", "15", "-L", "5"}, false, 899, 0},
		{[]string{"-branches", "5,4,4;5,3,4,5,2;1,2,2,5,5,1,3;5,1,4,1,3,5,2,2,2;4,2,5,3,3,3,3,3,3,5,5"}, true, 118.7112489, 1},
		{[]string{"-branches", "2,3,1,2;4,1;1,1,3,2,5,2"}, true, 37, 2},
		{[]string{"-branches", "2,2,3;5,1;4,4,4,4"}, true, 31, 2},
	} {
		args := append([]string{"eval", "-json"}, tc.graph...)
		if tc.source {
			args = append(args, "-train-source")
		}
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var obj struct {
			Theory struct {
				Optimum   float64   `json:"rlvr_optimum"`
				Source    bool      `json:"train_source"`
				First     float64   `json:"rlvr_optimum_first_branch"`
				Entry     []float64 `json:"rlvr_optimum_entry"`
				Certified bool      `json:"rlvr_optimum_certified"`
				Cert      struct {
					Gradient float64 `json:"gradient"`
					Margin   float64 `json:"margin"`
				} `json:"rlvr_optimum_certificate"`
			} `json:"theory"`
		}
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatal(err)
		}
		th := obj.Theory
		if math.Abs(th.Optimum-tc.want) > 1e-7*tc.want || th.Source != tc.source || th.First != tc.first || !th.Certified ||
			th.Cert.Gradient > 1e-9 || th.Cert.Margin < 0 || len(th.Entry) == 0 {
			t.Errorf("%v: theory %+v, want optimum %.10g entering branch %v, certified", args, th, tc.want, tc.first)
		}
	}
}

// TestTuneGC checks that train runs its collector at gcPercent when GOGC
// is not set, and leaves a GOGC the user set alone.
func TestTuneGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC: the collector at %d, want %d", got, gcPercent)
	}
	tuneGC(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=200 set: tuneGC moved the collector to %d, want it left at 100 (the runtime's reading of GOGC)", got)
	}
}
