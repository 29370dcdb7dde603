package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/reproduce"
)

// TestReproduceQuick runs every entry at reduced size and checks the
// agreement column of results.md: every implemented claim agrees with the
// paper, or agrees in effect where the paper's statement is imprecise.
func TestReproduceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	out := t.TempDir()
	code, _, errs := runCLI(t, "reproduce", "all", "-quick", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 6 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| entry") || strings.HasPrefix(line, "| ---") {
			continue
		}
		rows++
		entry, agrees := strings.TrimPrefix(cells[0], "| "), cells[4]
		want := []string{"yes", "imprecise"}
		ok := false
		for _, w := range want {
			ok = ok || strings.HasPrefix(agrees, w)
		}
		if !ok {
			t.Errorf("%s: agreement %q, want one of %v (%s)", entry, agrees, want, cells[3])
		}
	}
	if want := len(reproduce.Names()); rows != want {
		t.Errorf("results.md has %d rows, want %d", rows, want)
	}
	for _, f := range []string{"fig8-hetero/hitting_time.png", "thm1-pretrain/invalid_mass.png", "thm2-sft/abcd.png", "thm5-distill/hitting_time.png", "fig5-sft-scaling/sft_scaling.png", "fig6-ppo/hitting_time.png", "fig3-4/abcd.png", "fig3-4/hitting_time.png", "thm4-separation/separation.png", "fig5-partial/partial_supervision.csv", "corollary-search/search_agent.png", "fig7-transformer/hitting_time.png", "fig7-transformer/learners.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
}

func TestReproduceBadInput(t *testing.T) {
	for _, args := range [][]string{{"reproduce"}, {"reproduce", "fig99"}, {"reproduce", "all", "-bogus"}, {"reproduce", "-quick", "fig99"}, {"reproduce", "-quick", "thm1-pretrain", "-bogus"}} {
		if code, _, errs := runCLI(t, args...); code != 2 || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// TestLoneDash: a lone "-" is an argument, not a flag, for the commands
// that take arguments and flags in any order: each refuses it in one line
// (reproduce once looped forever on it).
func TestLoneDash(t *testing.T) {
	for _, args := range [][]string{{"reproduce", "-"}, {"reproduce", "-quick", "-"}, {"aggregate", "-"}, {"sweep", "-", "-dry-run"}} {
		done := make(chan string, 1)
		go func() {
			code, _, errs := runCLI(t, args...)
			done <- fmt.Sprintf("exit %d, %q", code, errs)
		}()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "exit 2, ") || strings.Count(got, "\\n") != 1 {
				t.Errorf("%v: %s; want exit 2 and one line", args, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: no answer in 20 s", args)
		}
	}
}

// TestReproduceNamesAfterFlags: entry names may follow the flags, as in
// train reproduce -out DIR thm1-pretrain -quick.
func TestReproduceNamesAfterFlags(t *testing.T) {
	out := t.TempDir()
	code, stdout, errs := runCLI(t, "reproduce", "-out", out, "thm1-pretrain", "-quick")
	if code != 0 || !strings.Contains(stdout, "[1/1] thm1-pretrain") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want thm1-pretrain run", code, stdout, errs)
	}
	if _, err := os.Stat(filepath.Join(out, "results.md")); err != nil {
		t.Errorf("results.md: %v", err)
	}
}
