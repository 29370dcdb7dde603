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
		rc := DefaultConfig()
		if err := Decode(data, &rc); err != nil {
			return
		}
		rc.Graph.MaxBytes = 1 << 20 // the fuzzer must not build giant graphs
		if _, err := rc.Resolve(); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}
