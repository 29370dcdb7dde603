package nn

import (
	"reflect"
	"strings"
	"testing"
)

// ringSupport returns v rows in which row s allows the k tokens s+1 .. s+k (mod v).
func ringSupport(v, k int) Support {
	s := Support{Offsets: make([]int, v+1)}
	for r := 0; r < v; r++ {
		for j := 1; j <= k; j++ {
			s.Next = append(s.Next, (r+j)%v)
		}
		s.Offsets[r+1] = len(s.Next)
	}
	return s
}

func TestDenseSupport(t *testing.T) {
	s := DenseSupport(3)
	if got, want := s.Offsets, []int{0, 3, 6, 9}; !reflect.DeepEqual(got, want) {
		t.Errorf("offsets: got %v, want %v", got, want)
	}
	if got, want := s.Next, []int{0, 1, 2, 0, 1, 2, 0, 1, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("next: got %v, want %v", got, want)
	}
	if err := s.Validate(3); err != nil {
		t.Errorf("validate: got %v, want nil", err)
	}
	if got, want := s.NNZ(), 9; got != want {
		t.Errorf("nnz: got %d, want %d", got, want)
	}
	if got, want := s.Rows(), 3; got != want {
		t.Errorf("rows: got %d, want %d", got, want)
	}
}

func TestSupportValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Support
		v    int
		want string // substring of the error, "" for none
	}{
		{"valid", Support{Offsets: []int{0, 2, 3, 4}, Next: []int{1, 2, 0, 0}}, 3, ""},
		{"zero vocabulary", Support{Offsets: []int{0}}, 0, "vocabulary 0"},
		{"short offsets", Support{Offsets: []int{0, 2, 3}, Next: []int{1, 2, 0}}, 3, "len(Offsets) 3"},
		{"offset start", Support{Offsets: []int{1, 2, 3, 4}, Next: []int{1, 2, 0, 0}}, 3, "Offsets[0] 1"},
		{"offset end", Support{Offsets: []int{0, 2, 3, 3}, Next: []int{1, 2, 0, 0}}, 3, "Offsets[3] 3"},
		{"empty row", Support{Offsets: []int{0, 2, 2, 3}, Next: []int{1, 2, 0}}, 3, "row 1 has 0 entries"},
		{"decreasing", Support{Offsets: []int{0, 3, 2, 4}, Next: []int{1, 2, 0, 0}}, 3, "row 1 has -1 entries"},
		{"negative id", Support{Offsets: []int{0, 1, 2, 3}, Next: []int{1, -1, 0}}, 3, "next token -1"},
		{"id too large", Support{Offsets: []int{0, 1, 2, 3}, Next: []int{1, 3, 0}}, 3, "next token 3"},
		{"duplicate", Support{Offsets: []int{0, 2, 3, 4}, Next: []int{1, 1, 0, 0}}, 3, "row 0 lists next token 1 twice"},
		{"same token in two rows", Support{Offsets: []int{0, 1, 2}, Next: []int{1, 1}}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate(tt.v)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got error %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSupportRowsAndEntries(t *testing.T) {
	s := Support{Offsets: []int{0, 2, 3, 6}, Next: []int{1, 2, 0, 0, 1, 2}}
	if got, want := s.Row(2), []int{0, 1, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("row 2: got %v, want %v", got, want)
	}
	for e, want := range []int{0, 0, 1, 2, 2, 2} {
		if got := s.RowOf(e); got != want {
			t.Errorf("row of entry %d: got %d, want %d", e, got, want)
		}
	}
	tests := []struct{ r, a, want int }{{0, 1, 0}, {0, 2, 1}, {0, 0, -1}, {1, 0, 2}, {2, 2, 5}}
	for _, tt := range tests {
		if got := s.Entry(tt.r, tt.a); got != tt.want {
			t.Errorf("entry %d->%d: got %d, want %d", tt.r, tt.a, got, tt.want)
		}
	}
}
