package nn

import (
	"fmt"
	"sort"
)

// Support lists, in compressed sparse row (CSR) form, the next tokens each
// row may put probability mass on. Row s (the current token) allows the next
// tokens Next[Offsets[s]:Offsets[s+1]]; every other transition has
// probability exactly 0 and is never stored, so no -Inf logit ever enters
// arithmetic. For a vocabulary of V tokens, len(Offsets) == V+1,
// Offsets[0] == 0 and Offsets[V] == len(Next).
//
// The position of an allowed transition in Next is its entry index: logit
// and probability tables are laid out in this order (NNZ entries).
type Support struct {
	Offsets []int // row starts into Next, len V+1, non-decreasing
	Next    []int // allowed next tokens, row after row
}

// DenseSupport returns the support in which every one of the v rows allows
// all v next tokens, in increasing order: the dense v x v table, used only
// for pretraining from a zero initialisation.
func DenseSupport(v int) Support {
	s := Support{Offsets: make([]int, v+1), Next: make([]int, 0, v*v)}
	for r := 0; r < v; r++ {
		for a := 0; a < v; a++ {
			s.Next = append(s.Next, a)
		}
		s.Offsets[r+1] = len(s.Next)
	}
	return s
}

// Validate checks that s describes v rows over a vocabulary of v tokens:
// len(Offsets) == v+1, Offsets starts at 0, never decreases and ends at
// len(Next), every row has at least one entry, every next token is in
// [0, v) and no row lists the same token twice.
func (s Support) Validate(v int) error {
	if v <= 0 {
		return fmt.Errorf("nn: support: vocabulary %d: want > 0", v)
	}
	if len(s.Offsets) != v+1 {
		return fmt.Errorf("nn: support: len(Offsets) %d: want vocabulary+1 = %d", len(s.Offsets), v+1)
	}
	if s.Offsets[0] != 0 {
		return fmt.Errorf("nn: support: Offsets[0] %d: want 0", s.Offsets[0])
	}
	if s.Offsets[v] != len(s.Next) {
		return fmt.Errorf("nn: support: Offsets[%d] %d: want len(Next) = %d", v, s.Offsets[v], len(s.Next))
	}
	seen := make([]int, v) // seen[a] == r+1 when row r lists a
	for r := 0; r < v; r++ {
		lo, hi := s.Offsets[r], s.Offsets[r+1]
		if hi <= lo {
			return fmt.Errorf("nn: support: row %d has %d entries: want >= 1", r, hi-lo)
		}
		for _, a := range s.Next[lo:hi] {
			if a < 0 || a >= v {
				return fmt.Errorf("nn: support: row %d: next token %d: want in [0, %d)", r, a, v)
			}
			if seen[a] == r+1 {
				return fmt.Errorf("nn: support: row %d lists next token %d twice", r, a)
			}
			seen[a] = r + 1
		}
	}
	return nil
}

// NNZ returns the number of allowed transitions (the number of entries).
func (s Support) NNZ() int { return len(s.Next) }

// Rows returns the number of rows V.
func (s Support) Rows() int { return len(s.Offsets) - 1 }

// Row returns the allowed next tokens of row r. The slice aliases Next.
func (s Support) Row(r int) []int { return s.Next[s.Offsets[r]:s.Offsets[r+1]] }

// RowOf returns the row that entry e (an index into Next) belongs to.
func (s Support) RowOf(e int) int {
	// The last row whose offset is <= e; empty rows cannot occur in a valid support.
	return sort.SearchInts(s.Offsets, e+1) - 1
}

// Entry returns the entry index of the transition r -> a, or -1 when the
// transition is not in the support.
func (s Support) Entry(r, a int) int {
	for i, b := range s.Row(r) {
		if b == a {
			return s.Offsets[r] + i
		}
	}
	return -1
}
