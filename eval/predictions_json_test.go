package eval

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestPredictionsJSONOverflow: an SFT limit beyond float64 (K=400, L=5:
// ((L+1)^2/L)^K is about 1e343) is null in JSON, not an error, and every
// other key is written as before.
func TestPredictionsJSONOverflow(t *testing.T) {
	p := Predictions{H0: 275, RLVRLimit: 35, SFTLimit: math.Inf(1)}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["sft_limit"]; !ok || v != nil || m["H0"] != 275.0 || m["rlvr_limit"] != 35.0 {
		t.Errorf("got %s, want sft_limit null beside H0 275 and rlvr_limit 35", b)
	}
	p.SFTLimit = 783.5
	b, _ = json.Marshal(p)
	if !strings.HasSuffix(string(b), `"sft_limit":783.5}`) {
		t.Errorf("got %s, want sft_limit 783.5 last, as declared", b)
	}
}
