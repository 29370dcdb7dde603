package reproduce

import "testing"

// TestEveryEntryHasItsDocFigures: -docs copies a figure for every entry.
func TestEveryEntryHasItsDocFigures(t *testing.T) {
	for _, n := range Names() {
		if len(docFigures[n]) == 0 {
			t.Errorf("entry %s has no figure for the docs", n)
		}
	}
	if len(docFigures) != len(Names()) {
		t.Errorf("%d entries with doc figures, %d entries", len(docFigures), len(Names()))
	}
}
