package main

import (
	"os"
	"strings"
	"testing"
)

// TestManualMatchesDoc: the package comment of doc.go (what go doc shows)
// and the text train help prints are the same manual, line for line.
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
	if strings.TrimSpace(body) != strings.TrimSpace(manual) {
		t.Errorf("doc.go's comment and the manual differ:\n--- comment\n%s\n--- manual\n%s", body, manual)
	}
}
