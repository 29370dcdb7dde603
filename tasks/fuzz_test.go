package tasks

import "testing"

// FuzzParseBranches: the branch-spec parser never panics, and what it
// accepts formats back to a spec that parses to the same shape.
func FuzzParseBranches(f *testing.F) {
	for _, s := range []string{"2,2,3;5,1;4,4,4,4", "1", " 1 , 2 ; 3 ", "", ";", "2,,3", "1;0", "-1", "a", "99999999999999999999", "1;1;1;1;1;1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		b, err := ParseBranches(spec)
		if err != nil {
			return
		}
		again, err := ParseBranches(FormatBranches(b))
		if err != nil || FormatBranches(again) != FormatBranches(b) {
			t.Fatalf("%q: round trip gave %v, %v", spec, again, err)
		}
		c := Config{Branches: b, MaxBytes: 1 << 20}
		if err := c.Validate(); err == nil {
			if _, err := New(c); err != nil {
				t.Fatalf("%q: valid config, New failed: %v", spec, err)
			}
		}
	})
}
