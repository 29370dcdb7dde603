package main

import (
	"bytes"
	"flag"
	"go/format"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite doc.go from manual.txt, and the checked example outputs of the README and docs/")

// docIntro opens doc.go's package comment, before the manual.
const docIntro = `Command train reproduces and extends "Provable Benefits of RLVR over SFT
for Reasoning Models: Learning to Backtrack Efficiently". This comment is
its manual, printed by "train help": it is generated from manual.txt, the
one copy of the manual (go test -run TestManualMatchesDoc -update).`

// docComment is doc.go as generated from the manual: every line commented,
// the indented blocks (usage, flags, examples) as gofmt formats
// preformatted text.
func docComment(manual string) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated from manual.txt by TestManualMatchesDoc; DO NOT EDIT.\n\n")
	for _, l := range strings.Split(docIntro, "\n") {
		b.WriteString("// " + l + "\n")
	}
	b.WriteString("//\n")
	lines := strings.Split(strings.TrimRight(manual, "\n"), "\n")
	for i, l := range lines {
		switch {
		case l == "":
			b.WriteString("//\n")
		case strings.HasPrefix(l, " "):
			// Preformatted: a tab after "//", set off by a blank line.
			if i > 0 && lines[i-1] != "" && !strings.HasPrefix(lines[i-1], " ") {
				b.WriteString("//\n")
			}
			b.WriteString("//\t" + l + "\n")
		default:
			if i > 0 && strings.HasPrefix(lines[i-1], " ") {
				b.WriteString("//\n")
			}
			b.WriteString("// " + l + "\n")
		}
	}
	b.WriteString("package main\n")
	out, err := format.Source(b.Bytes()) // gofmt's own layout of the comment
	if err != nil {
		panic(err)
	}
	return out
}

// TestManualMatchesDoc: doc.go's package comment (what go doc shows) is
// generated from manual.txt, the text train help prints.
func TestManualMatchesDoc(t *testing.T) {
	want := docComment(manual)
	if *update {
		if err := os.WriteFile("doc.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("doc.go is not generated from manual.txt: rerun go test -run TestManualMatchesDoc -update")
	}
}
