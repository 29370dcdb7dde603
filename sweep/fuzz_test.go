package sweep

import (
	"strings"
	"testing"
)

// FuzzSpec: any bytes given as a spec are decoded and, when small enough,
// expanded without panicking; every error is one line, and a spec that
// decodes re-expands to the same runs.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{
		small,
		`{"grid": {"train.seed": [1, 2]}, "list": [{"model": "bigram"}, {"model": "transformer", "train.trainer": "ppo"}]}`,
		`{"lists": {"a": [{"train.trainer": "sft"}], "b": [{"graph": {"branches": [[2, 1], [1]]}}]}, "grid": {"train.optimizer.lr": [0.1, 0.2]}}`,
		`{"base": {"model": "transformer", "transformer": {"heads": 2}, "train": {"trainer": "ppo"}}, "grid": {"transformer.prompt": [true, false]}}`,
		`{"grid": {"train.seed": [1], "train.seed": [2]}}`,
		`{"grid": {"graph.W": [0]}}`, `{"grid": {}}`, `{"list": [{}]}`, `{"out": 3}`, `null`, `[]`, ``, `{"grid": {"a.b": [null]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec(data, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if s.Size() > 64 {
			return
		}
		if err := s.Base.Set("graph.max_bytes", []byte("1048576")); err != nil { // the fuzzer must not plan giant graphs
			t.Fatal(err)
		}
		p, err := s.Expand("out")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if len(p.Runs) != s.Size() {
			t.Fatalf("%d runs, want %d", len(p.Runs), s.Size())
		}
		q, err := s.Expand("out")
		if err != nil || len(q.Runs) != len(p.Runs) {
			t.Fatalf("second expansion: %v", err)
		}
		for i := range p.Runs {
			if p.Runs[i].Name != q.Runs[i].Name || p.Runs[i].Index != i {
				t.Fatalf("run %d: %s then %s", i, p.Runs[i].Name, q.Runs[i].Name)
			}
		}
	})
}
