package main

import (
	"os"
	"strings"
	"testing"
)

// TestManualMatchesDoc: the package comment of doc.go (what go doc shows)
// and the text train help prints are the same manual, line for line (gofmt
// re-indents a comment's preformatted blocks and sets them off with blank
// lines, so indentation and blank lines are ignored).
func TestManualMatchesDoc(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(l, "//") {
			break
		}
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "//"), " "))
	}
	_, body, ok := strings.Cut(strings.Join(lines, "\n"), "identical).\n\n")
	if !ok {
		t.Fatal("doc.go's comment has no manual after its introduction")
	}
	norm := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if norm(body) != norm(manual) {
		t.Errorf("doc.go's comment and the manual differ:\n--- comment\n%s\n--- manual\n%s", body, manual)
	}
}
