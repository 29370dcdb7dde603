package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNonsenseRefusedByTheBinary drives the real process (this test binary
// re-executed as main) with each input the reliability issue found
// accepted silently or answered with a stack trace: each exits 2 with one
// line naming the field, and leaves no run folder behind.
func TestNonsenseRefusedByTheBinary(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-branches", ""}, `-branches ""`},
		{[]string{"run", "-resume", ""}, `-resume ""`},
		{[]string{"run", "-config", write("null.json", "null")}, "got null"},
		{[]string{"run", "-config", write("empty.json", "")}, "empty"},
		{[]string{"run", "-config", write("dup.json", `{"graph":{"W":3},"graph":{"K":2,"L":2}}`)}, "graph: given twice"},
		{[]string{"run", "-config", write("case.json", `{"Graph":{"W":3,"K":3,"L":2}}`)}, "Graph: keys are case-sensitive: want graph"},
		{[]string{"run", "-config", write("case2.json", `{"train":{"seed":1,"Seed":5}}`)}, "train.Seed: keys are case-sensitive"},
		{[]string{"run", "-config", write("case3.json", `{"Transformer":{"dim":8}}`)}, "Transformer: keys are case-sensitive"},
		{[]string{"sweep", write("casesweep.json", `{"out":"x","base":{"Train":{"rollouts":5}},"grid":{"train.seed":[1]}}`), "-dry-run"}, "base: Train: keys are case-sensitive"},
		{[]string{"run", "-config", write("both.json", `{"graph":{"W":3,"K":2,"L":2,"branches":[[1]]}}`)}, "not both"},
		{[]string{"run", "-config", write("type.json", `{"graph":{"W":"x"}}`)}, "graph.W: got a JSON string"},
		{[]string{"run", "-trainer", "ppo", "-horizon-factor", "0.001"}, "horizon_factor 0.001"},
		{[]string{"run", "-W", "2", "-K", "2", "-L", "1", "-out", write("file.txt", "")}, "not a file"},
		{[]string{"reproduce", "thm1-pretrain", "thm1-pretrain"}, "named twice"},
		{[]string{"reproduce", "all", "nope", "-quick"}, "all is every entry and takes no others: give all alone, or drop it and keep nope"},
		{[]string{"reproduce", "fig3-4", "all"}, "all is every entry and takes no others"},
		{[]string{"export", filepath.Join(dir, "nope")}, "export: run folder " + filepath.Join(dir, "nope") + " does not exist"},
		{[]string{"export", write("notadir", "")}, "export: run folder " + filepath.Join(dir, "notadir") + " is not a folder"},
		{[]string{"run", "-model", "transformer", "-trainer", "ppo", "-context", "100000000"}, "GiB"},
		{[]string{"run", "-model", "transformer", "-trainer", "ppo", "-W", "3", "-K", "3", "-L", "2", "-init-mode", "identity", "-heads", "2"}, "heads can be 1, 61"},
		{[]string{"run", "-model", "transformer", "-trainer", "ppo", "-heads", "3"}, "divisor of dim 64"},
		{[]string{"run", "-W", "0"}, "W=0"},
		{[]string{"run", "-L", "-1"}, "L=-1"},
		{[]string{"run", "-branches", "1,x"}, `"x"`},
		{[]string{"run", "-bogus"}, "-bogus"},
	} {
		args := tc.args
		if tc.args[0] == "run" && !strings.Contains(strings.Join(args, " "), "-out") {
			args = append(append([]string(nil), args...), "-out", out)
		}
		cmd := trainProcess(t, args...)
		var stderr, stdout strings.Builder
		cmd.Stderr, cmd.Stdout = &stderr, &stdout
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%q: %v, stderr %q; want exit 2 and one line containing %q", tc.args, err, stderr.String(), tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q left the run folder %s behind", tc.args, out)
			os.RemoveAll(out)
		}
	}
}
