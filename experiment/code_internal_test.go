package experiment

import "testing"

// TestModuleCode: a binary installed from a module version names its
// commit by the pseudo-version's, or its tag.
func TestModuleCode(t *testing.T) {
	for v, want := range map[string]string{
		"v0.0.0-20261126131233-f299dc02bb95":       "f299dc02bb95",
		"v0.0.0-20261126131233-f299dc02bb95+dirty": "f299dc02bb95+dirty",
		"v1.2.4-0.20261126131233-0123456789ab":     "0123456789ab",
		"v1.2.3":                                   "v1.2.3",
		"v1.2.3-rc.1":                              "v1.2.3-rc.1",
	} {
		if got := moduleCode(v); got != want {
			t.Errorf("moduleCode(%q) = %q, want %q", v, got, want)
		}
	}
}
