package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// numpyDump loads an .npz with the system's numpy (allow_pickle off, its
// default) and returns each array's shape, dtype and values; the test is
// skipped when /usr/bin/python3 has no numpy.
func numpyDump(t *testing.T, path string) map[string]npyArray {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s has no numpy (apt-get install python3-numpy): %v", py, err)
	}
	script := `import json, sys, numpy as np
z = np.load(sys.argv[1])
print(json.dumps({k: {"shape": list(z[k].shape), "dtype": z[k].dtype.str, "values": z[k].ravel().tolist()} for k in z.files}))`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	var m map[string]npyArray
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return m
}

type npyArray struct {
	Shape  []int  `json:"shape"`
	Dtype  string `json:"dtype"`
	Values []any  `json:"values"`
}

// TestExportNumpy: train export writes an .npz that numpy reads back:
// every checkpointed parameter under its name with its shape and exact
// values (Python's float repr round-trips), the (from, to) token-id pairs
// of the model's support (the graph's transitions, and a prompted
// transformer's target rows to s0 -> f), a bigram's probabilities, the
// vocabulary as text, the step and the configuration.
func TestExportNumpy(t *testing.T) {
	root := t.TempDir()
	runs := map[string][]string{
		"bigram":      {"run", "-W", "2", "-K", "2", "-L", "2", "-steps", "20"},
		"transformer": {"run", "-model", "transformer", "-trainer", "ppo", "-prompt", "-dim", "8", "-W", "2", "-K", "2", "-L", "1", "-rollouts", "8", "-steps", "2", "-eval-rollouts", "200"},
	}
	for name, args := range runs {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			if code, _, errs := runCLI(t, append(args, "-out", dir)...); code != 0 {
				t.Fatalf("run: exit %d: %s", code, errs)
			}
			file := filepath.Join(root, name+".npz")
			if code, _, errs := runCLI(t, "export", dir, "-out", file); code != 0 {
				t.Fatalf("export: exit %d: %s", code, errs)
			}
			got := numpyDump(t, file)
			c, err := experiment.Open(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g := c.Graph
			want := map[string]bool{"transitions": true, "vocab": true, "step": true, "config": true}
			for _, p := range c.Params {
				want[p.Name] = true
				a := got[p.Name]
				shape := p.Shape
				if shape == nil {
					shape = []int{len(p.Data)}
				}
				if a.Dtype != "<f8" || !slices.Equal(a.Shape, shape) || len(a.Values) != len(p.Data) {
					t.Fatalf("%s: got %s %v with %d values, want <f8 %v", p.Name, a.Dtype, a.Shape, len(a.Values), shape)
				}
				for i, v := range a.Values {
					if v.(float64) != p.Data[i] {
						t.Fatalf("%s[%d]: got %v, want %v", p.Name, i, v, p.Data[i])
					}
				}
			}
			nnz := len(g.Next)
			if name == "bigram" {
				want["probs"] = true
				if a := got["probs"]; !slices.Equal(a.Shape, []int{nnz}) || a.Values[nnz-1].(float64) != c.Probs[nnz-1] {
					t.Errorf("probs: got %v, last %v; want (%d,), last %v", a.Shape, a.Values[nnz-1], nnz, c.Probs[nnz-1])
				}
			} else {
				nnz += g.W() // the prompt rows
				if b := got["B"]; b.Shape[0] != nnz {
					t.Errorf("B has %d entries, transitions %d: want one pair per entry", b.Shape[0], nnz)
				}
			}
			tr := got["transitions"]
			if tr.Dtype != "<i8" || !slices.Equal(tr.Shape, []int{nnz, 2}) {
				t.Fatalf("transitions: got %s %v, want <i8 (%d, 2)", tr.Dtype, tr.Shape, nnz)
			}
			for s := range g.NumStates() {
				for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
					if from, to := tr.Values[2*e].(float64), tr.Values[2*e+1].(float64); int(from) != s || int(to) != g.Next[e] {
						t.Fatalf("transitions[%d]: got (%v, %v), want (%d, %d)", e, from, to, s, g.Next[e])
					}
				}
			}
			for i := len(g.Next); i < nnz; i++ {
				id, _ := c.Vocab.Target(i - len(g.Next) + 1)
				if from, to := tr.Values[2*i].(float64), tr.Values[2*i+1].(float64); int(from) != id || to != 0 {
					t.Errorf("transitions[%d]: got (%v, %v), want the prompt row (%d, 0)", i, from, to, id)
				}
			}
			v := got["vocab"]
			if len(v.Values) != c.Vocab.Size() || v.Dtype[:2] != "<U" {
				t.Fatalf("vocab: got %s with %d names, want <U with %d", v.Dtype, len(v.Values), c.Vocab.Size())
			}
			for i, n := range v.Values {
				if w, _ := c.Vocab.Name(i); n != w {
					t.Errorf("vocab[%d]: got %q, want %q", i, n, w)
				}
			}
			if s := got["step"]; len(s.Shape) != 0 || int(s.Values[0].(float64)) != c.Step {
				t.Errorf("step: got %v %v, want the scalar %d", s.Shape, s.Values, c.Step)
			}
			var cfg experiment.Config
			if err := json.Unmarshal([]byte(got["config"].Values[0].(string)), &cfg); err != nil || cfg.Model != c.Config.Model || cfg.Graph.W != 2 {
				t.Errorf("config: %v, model %q", err, cfg.Model)
			}
			for k := range got {
				if !want[k] {
					t.Errorf("unexpected array %q", k)
				}
			}
			for k := range want {
				if _, ok := got[k]; !ok {
					t.Errorf("missing array %q", k)
				}
			}
		})
	}
}
