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

// TestRanPaper: results.md goes to the docs only after every entry of the
// paper ran (all, with or without the studies), not after some of them.
func TestRanPaper(t *testing.T) {
	rows := func(names ...string) (r []Result) {
		for _, n := range names {
			r = append(r, Result{Entry: n})
		}
		return r
	}
	all := Names()
	for _, tc := range []struct {
		name string
		rows []Result
		want bool
	}{
		{"all", rows(all...), true},
		{"all and the studies", rows(append(append([]string{}, all...), studies...)...), true},
		{"all but the last", rows(all[:len(all)-1]...), false},
		{"the studies alone", rows(studies...), false},
		{"none", nil, false},
	} {
		if got := ranPaper(tc.rows); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
