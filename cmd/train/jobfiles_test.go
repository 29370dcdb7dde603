package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hostileOut is a sweep folder made of everything a shell, sbatch, Slurm's
// file name patterns or YAML treat specially, short of a line break.
const hostileOut = `runs/a'b $(touch X) "c" #d %e ` + "`touch Y`" + ` :f: {g} [h], *i & j; k`

// hostileSpec writes a spec whose out is out into a folder whose name is
// hostile too, and returns the spec's path.
func hostileSpec(t *testing.T, out string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), `sp'ec $(touch Z) "dir"`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o, _ := json.Marshal(out)
	spec := filepath.Join(dir, "s p'ec.json")
	data := `{"out": ` + string(o) + `, "base": {"graph": {"W": 2, "K": 2, "L": 2}, "train": {"steps": 3}}, "grid": {"train.seed": [1, 2]}}`
	if err := os.WriteFile(spec, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// sbatchArgs splits an #SBATCH line's text after "#SBATCH" into arguments
// as sbatch does (src/sbatch/opt.c, _get_argument): whitespace separates
// arguments outside quotes, ' and " quote, a backslash takes the next
// character as it is, an unquoted # ends the line.
func sbatchArgs(line string) []string {
	var args []string
	var cur strings.Builder
	in, quoted, escaped := false, byte(0), false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case escaped:
			escaped = false
		case ch == '\\':
			escaped, in = true, true
			continue
		case quoted != 0:
			if ch == quoted {
				quoted = 0
				continue
			}
		case ch == '"' || ch == '\'':
			quoted, in = ch, true
			continue
		case ch == '#':
			i = len(line)
			continue
		case ch == ' ' || ch == '\t':
			if in {
				args, in = append(args, cur.String()), false
				cur.Reset()
			}
			continue
		}
		cur.WriteByte(ch)
		in = true
	}
	if in {
		args = append(args, cur.String())
	}
	return args
}

// TestSbatchArgs checks the model of sbatch's parser on sbatch's own
// cases: quotes, an escaped quote, a comment.
func TestSbatchArgs(t *testing.T) {
	for line, want := range map[string][]string{
		` --output=a b`:              {"--output=a", "b"},
		` --output="a b" # comment`:  {"--output=a b"},
		` --output='a"b' --x`:        {`--output=a"b`, "--x"},
		` --output="a\"b\\c#d"`:      {`--output=a"b\c#d`},
		` --job-name=x#not-an-arg y`: {"--job-name=x"},
	} {
		if got := sbatchArgs(line); !slices.Equal(got, want) {
			t.Errorf("%q: got %q, want %q", line, got, want)
		}
	}
}

// TestJobFilesKeepValuesWhole: the printed sbatch script and Kubernetes
// manifest of a spec whose out, file name and folder hold quotes, $(...),
// backquotes, #, %, backslashes and YAML's specials parse as what they
// are (bash -n; sbatch's reading of each #SBATCH line; JSON, and YAML
// with python3's yaml when it is there), and each hostile value stays one
// value: the script, run by bash with a stand-in binary, hands train
// exactly its arguments and runs nothing else.
func TestJobFilesKeepValuesWhole(t *testing.T) {
	spec := hostileSpec(t, hostileOut)
	work := t.TempDir()
	t.Chdir(work)
	stub := filepath.Join(t.TempDir(), `bin dir'$(touch W)`, "train")
	os.MkdirAll(filepath.Dir(stub), 0o755)
	got := filepath.Join(t.TempDir(), "args")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done > '"+got+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, script, errs := runCLI(t, "sweep", spec, "-print", "slurm", "-binary", stub, "-mem", "4G", "-time", "1-12:00", "-partition", "gpu,cpu")
	if code != 0 {
		t.Fatalf("-print slurm: exit %d: %s", code, errs)
	}
	path := filepath.Join(t.TempDir(), "sweep.sbatch")
	os.WriteFile(path, []byte(script), 0o755)
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v: %s\n%s", err, out, script)
	}
	out := filepath.Join(work, hostileOut)
	want := map[string]string{"--output": strings.ReplaceAll(out, "%", "%%") + "/slurm-%A_%a.out", "--chdir": work, "--mem": "4G", "--time": "1-12:00", "--partition": "gpu,cpu"}
	for _, line := range strings.Split(script, "\n") {
		rest, ok := strings.CutPrefix(line, "#SBATCH")
		if !ok {
			continue
		}
		args := sbatchArgs(rest)
		if len(args) != 1 {
			t.Errorf("%q: sbatch reads %d arguments %q, want 1", line, len(args), args)
			continue
		}
		name, value, _ := strings.Cut(args[0], "=")
		if w, ok := want[name]; ok && value != w {
			t.Errorf("%s: sbatch reads %q, want %q", name, value, w)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("no #SBATCH line for %v", want)
	}
	run := exec.Command("bash", path)
	run.Dir = work
	if msg, err := run.CombinedOutput(); err != nil {
		t.Fatalf("bash %s: %v: %s", path, err, msg)
	}
	data, err := os.ReadFile(got)
	if err != nil {
		t.Fatalf("the stand-in train did not run: %v", err)
	}
	if args, want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), []string{"sweep", spec, "-out", out, "-jobs", "1"}; !slices.Equal(args, want) {
		t.Errorf("train got %q, want %q", args, want)
	}
	for _, dir := range []string{work, filepath.Dir(spec), filepath.Dir(stub)} {
		for _, f := range []string{"W", "X", "Y", "Z"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("the script ran an injected command: %s exists", filepath.Join(dir, f))
			}
		}
	}

	spec = hostileSpec(t, hostileOut+`\ l`)
	code, manifest, errs := runCLI(t, "sweep", spec, "-print", "k8s", "-mem", "4Gi", "-image", "ghcr.io/me/train:v1", "-claim", "sweeps.lab", "-mount", "/data/s w")
	if code != 0 {
		t.Fatalf("-print k8s: exit %d: %s", code, errs)
	}
	var body strings.Builder
	for _, line := range strings.SplitAfter(manifest, "\n") {
		if !strings.HasPrefix(line, "#") {
			body.WriteString(line)
		}
	}
	var job map[string]any
	if err := json.Unmarshal([]byte(body.String()), &job); err != nil {
		t.Fatalf("the manifest is not JSON after its comments: %v\n%s", err, manifest)
	}
	container := job["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var command []string
	for _, c := range container["command"].([]any) {
		command = append(command, c.(string))
	}
	if want := []string{"train", "sweep", "/data/s w/s p'ec.json", "-out", "/data/s w/" + hostileOut + `\ l`, "-jobs", "1"}; !slices.Equal(command, want) {
		t.Errorf("command %q, want %q", command, want)
	}
	if wd := container["workingDir"]; wd != "/data/s w" {
		t.Errorf("workingDir %v, want the claim's mount, /data/s w (the spec's relative paths are the claim's, as Slurm's --chdir makes them the submit folder's)", wd)
	}
	if m := container["resources"].(map[string]any)["limits"].(map[string]any)["memory"]; m != "4Gi" || container["image"] != "ghcr.io/me/train:v1" {
		t.Errorf("memory %v, image %v; want 4Gi, ghcr.io/me/train:v1", m, container["image"])
	}
	yamlMatches(t, manifest, job)
}

// yamlMatches parses text with python3's yaml module, when there is one,
// and expects the same document as want.
func yamlMatches(t *testing.T, text string, want map[string]any) {
	t.Helper()
	if exec.Command("python3", "-c", "import yaml").Run() != nil {
		t.Log("python3 with its yaml module is not here: the manifest is checked as JSON only")
		return
	}
	cmd := exec.Command("python3", "-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("yaml.safe_load: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("YAML reads another document than JSON (%v):\n%s", err, out)
	}
}

// TestJobFilesRefuseInjection: a line break (or any control character) in
// the spec's out, its file name, -binary, -partition or -mount, and a
// value outside its engine's syntax (-mem lots, -time forever, an image or
// claim name Kubernetes refuses, an out that leaves the claim), is refused
// in one line naming the flag or field and what is allowed, exit 2, with
// nothing printed and no sweep.json written; so is a flag of the other
// engine, or of -print without it.
func TestJobFilesRefuseInjection(t *testing.T) {
	t.Chdir(t.TempDir())
	good := hostileSpec(t, "runs/good")
	breakOut := hostileSpec(t, "runs/a\ntouch X\nb")
	named := filepath.Join(t.TempDir(), "a\ntouch X\n.json")
	os.WriteFile(named, []byte(`{"grid": {"train.seed": [1]}}`), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"out with a line break, slurm", []string{breakOut, "-print", "slurm", "-binary", "/bin/train"}, `/runs/a\ntouch X\nb": holds the control character U+000A`},
		{"out with a backslash, slurm", []string{good, "-print", "slurm", "-binary", "/bin/train", "-out", `runs\x`}, `runs\\x": holds a backslash, which turns off Slurm's %A and %a`},
		{"out with a line break, k8s", []string{breakOut, "-print", "k8s"}, `out (the sweep's folder) "runs/a\ntouch X\nb": holds the control character U+000A`},
		{"spec file name", []string{named, "-print", "k8s"}, `spec name "a\ntouch X\n": holds the control character U+000A`},
		{"binary", []string{good, "-print", "slurm", "-binary", "/bin/train\rrm -rf ~"}, `-binary "/bin/train\rrm -rf ~": holds the control character U+000D`},
		{"partition", []string{good, "-print", "slurm", "-binary", "/bin/train", "-partition", "p\ntouch X"}, `-partition "p\ntouch X": want a partition name`},
		{"slurm mem", []string{good, "-print", "slurm", "-binary", "/bin/train", "-mem", "lots"}, `-mem "lots": want Slurm's memory: megabytes, or a number with a unit K, M, G or T`},
		{"slurm time", []string{good, "-print", "slurm", "-binary", "/bin/train", "-time", "forever"}, `-time "forever": want one of Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours`},
		{"k8s mem", []string{good, "-print", "k8s", "-mem", "4 GB"}, `-mem "4 GB": want a Kubernetes quantity of bytes`},
		{"image", []string{good, "-print", "k8s", "-image", "Bad Image\nx"}, `-image "Bad Image\nx": want a container image reference`},
		{"claim", []string{good, "-print", "k8s", "-claim", "Sweep_Claim"}, `-claim "Sweep_Claim": want a persistent volume claim's name`},
		{"mount", []string{good, "-print", "k8s", "-mount", "sweep"}, `-mount "sweep": want an absolute path without ':'`},
		{"relative binary, k8s", []string{good, "-print", "k8s", "-binary", "./train"}, `-binary "./train": want a name on the image's PATH (train) or an absolute path in the image`},
		{"mount with a line break", []string{good, "-print", "k8s", "-mount", "/s\nx"}, `-mount "/s\nx": holds the control character U+000A`},
		{"out leaves the claim", []string{good, "-print", "k8s", "-out", "../../etc"}, `out (the sweep's folder) "../../etc": leaves the claim`},
		{"k8s flag with slurm", []string{good, "-print", "slurm", "-image", "x"}, "-image applies to -print k8s only, not -print slurm"},
		{"slurm flag with k8s", []string{good, "-print", "k8s", "-time", "10"}, "-time applies to -print slurm only, not -print k8s"},
		{"print flag without print", []string{good, "-mem", "4G", "-dry-run"}, "-mem applies to -print (slurm or k8s) only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append([]string{"sweep"}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing printed, one line with %q", code, out, errs, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join("runs", "good", "sweep.json")); err == nil {
		t.Error("a refused -print wrote sweep.json")
	}
}
