package tokenizer

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func graph(t testing.TB, c tasks.Config) *tasks.Graph {
	t.Helper()
	g, err := tasks.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func Example() {
	g, _ := tasks.New(tasks.Config{W: 2, K: 1, L: 2})
	v := New(g)
	path, _ := g.GoldenPath(2, []int{2})
	ids, _ := v.Encode(path)
	text, _ := v.Format(ids)
	fmt.Println(ids)
	fmt.Println(text)
	t2, _ := v.Target(2)
	bos, _ := v.Special("<bos>")
	fmt.Println(v.Size(), t2, bos)
	// Output:
	// [0 9 12 15]
	// s0>f f>u2.1l u2.1l>u2.1r#2 u2.1r>t2
	// 21 18 19
}

func TestRoundTrips(t *testing.T) {
	g := graph(t, tasks.Config{Branches: [][]int{{2, 3}, {1}, {4, 1, 1}}})
	v := New(g)
	rng := rand.New(rand.NewPCG(1, 0))
	for target := 1; target <= g.W(); target++ {
		path, _ := g.RandomGoldenPath(target, rng)
		ids, err := v.Encode(path)
		if err != nil {
			t.Fatal(err)
		}
		back, err := v.Decode(ids)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(path) {
			t.Errorf("decode(encode(%v)) = %v, %v", path, back, err)
		}
		text, _ := v.Format(ids)
		parsed, err := v.Parse(text)
		if err != nil || fmt.Sprint(parsed) != fmt.Sprint(ids) {
			t.Errorf("parse(format(%v)) = %v, %v", ids, parsed, err)
		}
	}
	for id := range v.Size() {
		name, _ := v.Name(id)
		if got, _ := v.ID(name); got != id {
			t.Errorf("ID(Name(%d)) = %d", id, got)
		}
	}
}

func TestDecodeRefusesNonStates(t *testing.T) {
	v := New(graph(t, tasks.Config{W: 2, K: 1, L: 1}))
	t1, _ := v.Target(1)
	for _, ids := range [][]int{{0, t1}, {-1}, {v.Size()}} {
		if _, err := v.Decode(ids); err == nil {
			t.Errorf("Decode(%v): got no error", ids)
		}
	}
	if _, err := v.Parse("s0>f nope"); err == nil || !strings.Contains(err.Error(), "position 1") {
		t.Errorf("Parse with an unknown name: got %v", err)
	}
}

// TestVocabFile checks the golden vocabulary file and that write, read,
// write is byte-identical.
func TestVocabFile(t *testing.T) {
	g := graph(t, tasks.Config{Branches: [][]int{{2, 1}, {1}}})
	var buf bytes.Buffer
	if _, err := New(g).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "vocab-2,1;1.txt")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("vocabulary file differs from %s (rerun with -update if intended):\n%s", golden, buf.String())
	}
	v, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	v.WriteTo(&again)
	if !bytes.Equal(again.Bytes(), want) {
		t.Error("read then write is not byte-identical")
	}
	if err := v.Matches(g); err != nil {
		t.Error(err)
	}
	if err := v.Matches(graph(t, tasks.Config{W: 2, K: 1, L: 1})); err == nil {
		t.Error("Matches with another graph: got no error")
	}
	// Version 1 files (before model_rows) still read, with the states as
	// the model rows; a prompted model's vocabulary marks the targets too.
	old, err := os.ReadFile(filepath.Join("testdata", "vocab-v1-2,1;1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := Read(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if v1.Rows() != v1.NumStates() || v1.Size() != v.Size() {
		t.Errorf("version 1 file: %d rows of %d tokens, want the %d states of %d", v1.Rows(), v1.Size(), v.NumStates(), v.Size())
	}
	p := New(g).ForModel(true)
	var pbuf bytes.Buffer
	p.WriteTo(&pbuf)
	back, err := Read(&pbuf)
	if err != nil || back.Rows() != p.NumStates()+2 {
		t.Errorf("prompted model's vocabulary: read back %v rows (%v), want states + 2 targets", back.Rows(), err)
	}
}

func TestReadRefusesBadFiles(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 1, L: 2})
	var buf bytes.Buffer
	New(g).WriteTo(&buf)
	good := buf.String()
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	for name, text := range map[string]string{
		"empty":       "",
		"bad magic":   strings.Replace(good, fileMagic, "vocab", 1),
		"bad version": strings.Replace(good, "vocab 2 ", "vocab 9 ", 1),
		"bad rows":    strings.Replace(good, "model_rows=", "model_rows=1", 1),
		"v1 rows":     strings.Replace(good, "vocab 2 ", "vocab 1 ", 1),
		"truncated":   strings.Join(lines[:len(lines)-3], "\n") + "\n",
		"extra":       good + "extra\n",
		"renamed":     strings.Replace(good, "s0>f\n", "s0>g\n", 1),
		"duplicate":   strings.Replace(good, "<pad>\n", "<bos>\n", 1),
		"bad spec":    strings.Replace(good, "branches=2;2", "branches=2;;2", 1),
		"bad count":   strings.Replace(good, "states=", "states=9", 1),
	} {
		if _, err := Read(strings.NewReader(text)); err == nil {
			t.Errorf("%s: got no error", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
}
