package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// TestMain lets the test binary act as the train command in a subprocess
// (TRAIN_AS_MAIN holds its arguments as JSON), so tests can kill it.
func TestMain(m *testing.M) {
	if args := os.Getenv("TRAIN_AS_MAIN"); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Exit(run(a, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func trainProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TRAIN_AS_MAIN="+string(a))
	return cmd
}

// TestSIGKILLResume kills a training process with SIGKILL at random
// moments, resumes it each time from its last checkpoint (or restarts it
// if none was written yet), and expects metrics identical, byte for byte,
// to an uninterrupted run's.
func TestSIGKILLResume(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds")
	}
	base := t.TempDir()
	args := func(out string) []string {
		return []string{"run", "-W", "15", "-K", "15", "-L", "5", "-optimizer", "adam", "-lr", "0.02", "-until", "0",
			"-steps", "300", "-log-every", "1", "-checkpoint-every", "7", "-out", out}
	}
	full, cut := filepath.Join(base, "full"), filepath.Join(base, "cut")
	if code, _, errs := runCLI(t, args(full)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, errs)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for attempt := 0; ; attempt++ {
		a := args(cut)
		if _, err := os.Stat(filepath.Join(cut, experiment.CheckpointFile)); err == nil {
			a = []string{"run", "-resume", cut}
		}
		cmd := trainProcess(t, a...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if attempt < 4 {
			select {
			case <-time.After(time.Duration(100+rng.IntN(500)) * time.Millisecond):
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				continue
			case err := <-done:
				if err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
			}
		} else if err := <-done; err != nil {
			t.Fatalf("final resume: %v", err)
		}
		if _, err := os.Stat(filepath.Join(cut, "summary.json")); err == nil {
			break
		}
	}
	t.Logf("killed %d times", kills)
	for _, f := range []string{"metrics.csv", "abcd.csv"} {
		a, b := withoutWall(t, filepath.Join(full, f)), withoutWall(t, filepath.Join(cut, f))
		if a != b || len(a) == 0 {
			t.Errorf("%s: the killed and resumed run differs from the uninterrupted one (%d vs %d bytes)", f, len(b), len(a))
		}
	}
}

// TestSIGTERMExits143 sends SIGTERM to a real process: it writes a
// checkpoint, exits 143 and says how to resume.
func TestSIGTERMExits143(t *testing.T) {
	if testing.Short() {
		t.Skip("a second")
	}
	out := filepath.Join(t.TempDir(), "run")
	_, stderr, err := signalWhen(t, "step 0/100000", syscall.SIGTERM, "run", "-W", "15", "-K", "15", "-L", "5", "-until", "0", "-steps", "100000", "-out", out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit: %v, want 143; stderr %q", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, experiment.CheckpointFile)); err != nil {
		t.Errorf("no checkpoint after SIGTERM: %v", err)
	}
	if want := "train run -resume " + out; !contains(stderr.String(), want) {
		t.Errorf("stderr %q does not say %q", stderr.String(), want)
	}
}

// TestSIGINTDuringEvaluation interrupts a transformer run during its first
// Monte Carlo evaluation, made long on purpose (SFT, which measures on fresh
// rollouts rather than on its batch: 10^6 rollouts of about 13k tokens at
// W=K=10, L=4, no token bound, minutes of sampling): the signal is
// sent once the run says it is measuring, and the run exits 130 at step 0
// without printing that step's row, so it stopped inside the evaluation
// rather than after it. (No time bound: a loaded machine only makes the
// evaluation longer.)
func TestSIGINTDuringEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := signalWhen(t, "measuring the policy (Monte Carlo)", syscall.SIGINT, "run", "-model", "transformer", "-trainer", "sft", "-W", "10", "-K", "10", "-L", "4", "-eval-rollouts", "1000000", "-eval-tokens", "0", "-out", out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130; stderr %q", err, stderr.String())
	}
	if !contains(stderr.String(), "interrupted by interrupt at step 0") || contains(stdout.String(), "hitting_time") {
		t.Errorf("stdout %q, stderr %q: want the run interrupted at step 0, before its first row", stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, experiment.SummaryFile)); err == nil {
		t.Errorf("an interrupted run wrote %s", experiment.SummaryFile)
	}
}

// signalAfter starts train with args as a real process, sends it sig after
// delay and waits: its stderr and the process's error. For commands that
// print nothing before the work the signal should interrupt; the others use
// signalWhen.
func signalAfter(t *testing.T, delay time.Duration, sig os.Signal, args ...string) (*safeBuffer, error) {
	t.Helper()
	cmd := trainProcess(t, args...)
	stderr := new(safeBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	return stderr, err
}

// TestSIGTERMDuringReproduce: reproduce hands the signal to the entry's runs
// (fig7-transformer -quick: three bigram runs of about 0.2 s, then three
// transformer runs of 1.6-3.3 s, two at a time). The signal is sent once the bigram runs
// are done; the transformer runs in progress stop with a checkpoint, and the
// command exits 143 and writes no results.md.
func TestSIGTERMDuringReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	out := filepath.Join(t.TempDir(), "repro")
	_, stderr, err := signalWhen(t, "[3/6]", syscall.SIGTERM, "reproduce", "fig7-transformer", "-quick", "-out", out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit: %v, want 143; stderr %q", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted by terminated") {
		t.Errorf("stderr %q, want it to name the signal", stderr.String())
	}
	stopped := 0 // transformer runs with a checkpoint and no summary
	dirs, _ := filepath.Glob(filepath.Join(out, "fig7-transformer", "runs", "transformer-*"))
	for _, d := range dirs {
		_, errC := os.Stat(filepath.Join(d, experiment.CheckpointFile))
		_, errS := os.Stat(filepath.Join(d, experiment.SummaryFile))
		if errC == nil && errS != nil {
			stopped++
		}
	}
	if stopped == 0 {
		t.Errorf("no transformer run stopped with its checkpoint (runs %v)", dirs)
	}
	if _, err := os.Stat(filepath.Join(out, "results.md")); err == nil {
		t.Error("an interrupted reproduce wrote results.md")
	}
}

// signalWhen starts train with args as a real process, sends it sig once its
// stdout or stderr contains marker and waits: its stdout, its stderr and
// the process's error. A process that exits before printing marker, or runs on for 2
// minutes before it or after the signal, fails the test.
func signalWhen(t *testing.T, marker string, sig os.Signal, args ...string) (stdout, stderr *safeBuffer, err error) {
	t.Helper()
	cmd := trainProcess(t, args...)
	stdout, stderr = new(safeBuffer), new(safeBuffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(stdout.String(), marker) && !strings.Contains(stderr.String(), marker) {
		select {
		case err := <-done:
			t.Fatalf("exited (%v) before printing %q; stderr %q", err, marker, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no %q after 2 minutes; stderr %q", marker, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cmd.Process.Signal(sig)
	select {
	case err = <-done:
		return stdout, stderr, err
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("still running 2 minutes after %v; stderr %q", sig, stderr.String())
		return nil, nil, nil
	}
}
