package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalTransformerCheckpoint: train eval -checkpoint on a transformer
// run folder estimates its hitting time by Monte Carlo. A transformer
// that has barely moved from its initialisation (one step at lr 1e-12) is
// still the pretrained bigram exactly, whose hitting time at W=2, K=2, L=1
// is H_0 = (2W-1)(1+K+K/L)(1+K(L+1)) = 3*5*5 = 75 (Appendix B): the
// estimate's 95% interval holds it (3 half-widths of slack). The JSON has
// the bigram's Monte Carlo keys and the attention; the same seed gives the
// same numbers; -search-agent and -probs (a Markov
// policy's) are refused, as are -mc 0 and -horizon 0 (a Markov policy's
// none). The run and eval each write the
// attention heat map, eval only when no run holds the folder.
func TestEvalTransformerCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tf")
	if code, _, errs := runCLI(t, "run", "-model", "transformer", "-trainer", "ppo", "-W", "2", "-K", "2", "-L", "1",
		"-rollouts", "8", "-lr", "1e-12", "-table-lr", "1e-12", "-steps", "1", "-eval-rollouts", "200", "-out", dir); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	png := filepath.Join(dir, "attention.png")
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("the run wrote no attention heat map: %v", err)
	}
	os.Remove(png)
	code, out, errs := runCLI(t, "eval", "-checkpoint", dir, "-json", "-mc", "4000", "-seed", "3")
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, errs)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"graph", "policy", "states", "transitions", "theory", "mc_n", "mc_hits", "mc_hitting_time", "mc_hitting_time_ci95", "mc_success_rate", "mc_horizon", "attention"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("missing key %q in\n%s", k, out)
		}
	}
	h, ci := obj["mc_hitting_time"].(float64), obj["mc_hitting_time_ci95"].(float64)
	if math.Abs(h-75) > 3*ci || ci <= 0 || ci > 5 {
		t.Errorf("mc_hitting_time %v ± %v, want 75 within 3 half-widths", h, ci)
	}
	if obj["mc_success_rate"].(float64) != 1 || obj["mc_n"].(float64) != 4000 || obj["mc_horizon"].(float64) != 50*75 {
		t.Errorf("success rate %v, rollouts %v, horizon %v: want 1, 4000 and 50 x 75", obj["mc_success_rate"], obj["mc_n"], obj["mc_horizon"])
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("eval -checkpoint wrote no attention heat map: %v", err)
	}
	att := obj["attention"].(map[string]any)
	if att["attention_on_prompt"].(float64) != 0 || att["positions"].(float64) <= 0 {
		t.Errorf("attention %v: want nothing on a prompt there is not, and positions counted", att)
	}
	if _, again, _ := runCLI(t, "eval", "-checkpoint", dir, "-json", "-mc", "4000", "-seed", "3"); again != out {
		t.Errorf("same seed, another report:\n%s\n%s", out, again)
	}
	code, out, errs = runCLI(t, "eval", "-checkpoint", dir, "-mc", "300")
	if code != 0 || !strings.Contains(out, "Monte Carlo, horizon 3750 (300 rollouts") || !strings.Contains(out, "off the current token") {
		t.Errorf("text: exit %d: %s%s", code, out, errs)
	}
	// While a run holds the folder, eval still evaluates but leaves the
	// heat map alone (the run draws its own at its end).
	release := holdLock(t, filepath.Join(dir, ".lock"))
	os.Remove(png)
	code, out, errs = runCLI(t, "eval", "-checkpoint", dir, "-mc", "300")
	if code != 0 || !strings.Contains(out, "Monte Carlo, horizon 3750 (300 rollouts") || !strings.Contains(out, "heat map by position: not redrawn") ||
		!strings.Contains(errs, "attention.png not redrawn: a run is training in") {
		t.Errorf("a locked folder: exit %d: %s%s", code, out, errs)
	}
	if _, err := os.Stat(png); err == nil {
		t.Error("eval drew the heat map into a folder a run holds")
	}
	release()
	for _, flag := range []string{"-search-agent", "-probs"} {
		code, _, errs = runCLI(t, "eval", "-checkpoint", dir, "-mc", "10", flag)
		if code != 2 || !strings.Contains(errs, "holds a transformer") {
			t.Errorf("%s: exit %d, stderr %q; want 2, refused", flag, code, errs)
		}
	}
	// A given 0 is a Markov policy's none, which a transformer cannot take:
	// refused, not replaced by the run's own number or horizon.
	for _, args := range [][]string{{"-mc", "0"}, {"-horizon", "0"}, {"-mc", "300", "-horizon", "0"}} {
		code, out, errs = runCLI(t, append([]string{"eval", "-checkpoint", dir}, args...)...)
		want := "eval: " + args[len(args)-2] + " 0: " + dir + " holds a transformer"
		if code != 2 || !oneLine(errs) || !strings.Contains(errs, want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, %q and no output", args, code, out, errs, want)
		}
	}
}
