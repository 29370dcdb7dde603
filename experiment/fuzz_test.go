package experiment

import (
	"strings"
	"testing"
)

// FuzzConfig: any bytes given as a config file are decoded and resolved
// without panicking, and every error is one line.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{"graph":{"W":3,"K":2,"L":2},"model":"bigram","train":{"trainer":"sft","optimizer":{"name":"sign","lr":0.01},"steps":10,"until":0,"seed":1,"log_every":1}}`,
		`{"graph":{"branches":[[2,3],[1]]}}`,
		`{"graph":{"W":0}}`,
		`{"trian":{}}`,
		`{"graph":{"W":3}} {"graph":{}}`,
		`{"train":{"optimizer":{"name":"adam","lr":-1,"beta1":2}}}`,
		`{"graph":{"W":1e999}}`,
		`[]`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGiven(data)
		if err == nil {
			if err := g.Set("graph.max_bytes", []byte("1048576")); err != nil { // the fuzzer must not build giant graphs
				return
			}
			_, err = g.Resolve()
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}
