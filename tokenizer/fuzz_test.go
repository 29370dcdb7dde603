package tokenizer

import (
	"bytes"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// FuzzRead: the vocabulary reader never panics, and a file it accepts
// writes back byte for byte.
func FuzzRead(f *testing.F) {
	for _, c := range []tasks.Config{{W: 1, K: 1, L: 1}, {Branches: [][]int{{2, 1}, {1}}}} {
		g, _ := tasks.New(c)
		var buf bytes.Buffer
		New(g).WriteTo(&buf)
		f.Add(buf.Bytes())
	}
	f.Add([]byte("backtrack-vocab 1 branches=1 states=7 targets=1\n"))
	f.Add([]byte("backtrack-vocab 1 branches=999999;999999 states=1 targets=2\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		v.WriteTo(&out)
		if !bytes.Equal(out.Bytes(), data) && !bytes.Equal(out.Bytes(), append(data, '\n')) {
			t.Fatalf("accepted a file that does not write back:\n%q\n%q", data, out.Bytes())
		}
	})
}

// FuzzDecode: the token decoder and parser never panic on any input, and
// accept exactly the state tokens.
func FuzzDecode(f *testing.F) {
	g, _ := tasks.New(tasks.Config{Branches: [][]int{{2, 3}, {1}}})
	v := New(g)
	f.Add([]byte{0, 1, 2}, "s0>f f>u1.1l")
	f.Add([]byte{255, 40}, "<t1> <bos>")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		ids := make([]int, len(raw))
		for i, b := range raw {
			ids[i] = int(int8(b)) // negative ids too
		}
		states, err := v.Decode(ids)
		for i, id := range ids {
			isState := id >= 0 && id < v.NumStates()
			if err == nil && (!isState || states[i] != id) {
				t.Fatalf("Decode(%v) accepted %d", ids, id)
			}
		}
		if parsed, err := v.Parse(text); err == nil {
			back, err := v.Format(parsed)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := v.Parse(back); len(again) != len(parsed) {
				t.Fatalf("Parse(Format(Parse(%q))) changed length", text)
			}
		}
	})
}
