package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Cluster says how a sweep is submitted to a job-array engine: Slurm
// (SlurmScript) or a Kubernetes Indexed Job (KubernetesJob). Each array
// task or pod runs the same command, train sweep SPEC -out OUT, which
// finds its shard in the engine's environment (ShardFromEnv); a task run
// again resumes its runs from their checkpoints and skips finished ones.
type Cluster struct {
	Binary string // the train binary (Slurm: an absolute path; Kubernetes: the command in the image)
	Spec   string // the spec file (Slurm: absolute)
	Dir    string // Slurm: the working directory of every task (absolute)
	Tasks  int    // array tasks (shards); 0 or more than the runs: one per run
	CPUs   int    // cores per task (0: 1); each task trains CPUs runs at a time
	// Mem is the memory per task (Slurm: --mem, e.g. 4G; Kubernetes: e.g.
	// 4Gi; "": the engine's default).
	Mem string
	// Time (Slurm) is the time limit per task, e.g. 02:00:00 ("": the
	// partition's). Partition (Slurm) is the partition ("": the default).
	Time, Partition string
	// Parallel caps the tasks running at once (0: no cap; Kubernetes: all).
	Parallel int
	// Image, Claim and Mount (Kubernetes): the container image holding the
	// binary, the persistent volume claim holding the spec (at its root)
	// and receiving the run folders, and where it is mounted.
	Image, Claim, Mount string
}

// tasks is the array size: the number of shards.
func (c Cluster) tasks(p *Plan) int {
	if c.Tasks <= 0 || c.Tasks > len(p.Runs) {
		return len(p.Runs)
	}
	return c.Tasks
}

func (c Cluster) cpus() int { return max(c.CPUs, 1) }

// perTask says what a task runs; unit names a task ("array task",
// "completion index").
func perTask(p *Plan, tasks int, unit string) string {
	if tasks == len(p.Runs) {
		return fmt.Sprintf("one %s per run (%s i trains run i)", unit, unit)
	}
	units := unit + "s"
	if strings.HasSuffix(unit, "x") {
		units = unit + "es" // completion indexes
	}
	return fmt.Sprintf("%d %s, each a shard of the runs (%s i trains the runs whose index is i modulo %d)", tasks, units, unit, tasks)
}

// quote makes a word safe for a shell: as it is when it is plain, else
// single-quoted (checkText keeps line breaks out of every word).
func quote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./:=+-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// directiveQuote makes a value one argument of an #SBATCH line, as sbatch
// reads it: as it is when it is plain, else double-quoted with '\' and
// '"' escaped (sbatch honours quotes and backslashes there, and reads an
// unquoted '#' as the start of a comment).
func directiveQuote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./:=+%,@-]+$`).MatchString(s) {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// SlurmScript is an sbatch script running the plan as a job array. Slurm
// sends USR1 to the batch shell 120 s before the time limit
// (--signal=B:USR1@120): the shell passes SIGTERM to train, whose runs
// write their checkpoints, and requeues the task (--requeue), which then
// resumes them. A plain SIGTERM (scancel) stops the runs the same way
// without requeueing. Every value is checked (checkSlurm) and written in
// the quoting of its line: the shell's on command lines and comments,
// sbatch's on #SBATCH lines.
func SlurmScript(p *Plan, c Cluster) (string, error) {
	if err := c.checkSlurm(p); err != nil {
		return "", err
	}
	n := c.tasks(p)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "# Sweep %s: %d runs of %s, %s.\n", quote(p.Spec.Name), len(p.Runs), quote(c.Spec), perTask(p, n, "array task"))
	fmt.Fprintf(&b, "# Submit with: sbatch THIS_FILE. Afterwards: %s aggregate %s\n", quote(c.Binary), quote(p.Out))
	fmt.Fprintf(&b, "# A task run again (requeued, or the script submitted again) skips finished runs and resumes the others\n")
	fmt.Fprintf(&b, "# from their checkpoints. Array task i trains shard i of %d (%s, below) whatever part of the\n", n, ShardsEnv)
	fmt.Fprintf(&b, "# array is submitted: sbatch --array=%d THIS_FILE runs task %d alone again.\n", n-1, n-1)
	directive := func(option, value string) { fmt.Fprintf(&b, "#SBATCH --%s=%s\n", option, directiveQuote(value)) }
	directive("job-name", jobName(p.Spec.Name))
	array := fmt.Sprintf("0-%d", n-1)
	if c.Parallel > 0 {
		array += "%" + strconv.Itoa(c.Parallel)
	}
	directive("array", array)
	directive("ntasks", "1")
	directive("cpus-per-task", strconv.Itoa(c.cpus()))
	if c.Mem != "" {
		directive("mem", c.Mem)
	}
	if c.Time != "" {
		directive("time", c.Time)
	}
	if c.Partition != "" {
		directive("partition", c.Partition)
	}
	directive("chdir", c.Dir)
	// %A and %a are Slurm's job and task ids in a file name; a '%' of the
	// folder is written %%.
	directive("output", path.Join(strings.ReplaceAll(p.Out, "%", "%%"), "slurm-%A_%a.out"))
	directive("open-mode", "append")
	directive("signal", "B:USR1@120")
	b.WriteString("#SBATCH --requeue\n")
	fmt.Fprintf(&b, "\nexport %s=%d\n", ShardsEnv, n)
	fmt.Fprintf(&b, "%s sweep %s -out %s -jobs %d &\n", quote(c.Binary), quote(c.Spec), quote(p.Out), c.cpus())
	b.WriteString(`pid=$!
requeue=0
# USR1: the time limit is 120 s away. TERM (scancel): stop. Either way train
# checkpoints every running run and exits 143.
trap 'requeue=1; kill -TERM "$pid" 2>/dev/null' USR1
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
wait "$pid"; code=$?
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; code=$?; done # a trap ended the wait early
if [ "$requeue" = 1 ] && [ "$code" = 143 ]; then
  echo "time limit near: checkpoints written; requeueing $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID"
fi
exit "$code"
`)
	return b.String(), nil
}

// KubernetesJob is an Indexed Job manifest running the plan: completion
// index i trains shard i of the Job's completions (ShardsEnv). A failed
// pod is replaced by one with the same index (backoffLimitPerIndex), which
// resumes its runs; a pod evicted or preempted is replaced without
// counting as a failure, and bad input (exit 2) fails its index at once.
// The manifest is built as data and encoded as JSON, which is YAML too
// (kubectl reads either), after comment lines whose values are JSON
// strings: every value is checked (checkKubernetes) and stays one value.
func KubernetesJob(p *Plan, c Cluster) (string, error) {
	if c.Mount == "" {
		c.Mount = "/sweep"
	}
	if err := c.checkKubernetes(p); err != nil {
		return "", err
	}
	n := c.tasks(p)
	parallel := n
	if c.Parallel > 0 {
		parallel = min(c.Parallel, n)
	}
	out := c.claimPath(p.Out)
	command := []string{c.Binary, "sweep", path.Join(c.Mount, path.Base(c.Spec)), "-out", path.Join(c.Mount, out), "-jobs", strconv.Itoa(c.cpus())}
	resources := obj{"cpu": strconv.Itoa(c.cpus())}
	if c.Mem != "" {
		resources["memory"] = c.Mem
	}
	job := obj{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   obj{"name": jobName(p.Spec.Name)},
		"spec": obj{
			"completionMode":       "Indexed",
			"completions":          n,
			"parallelism":          parallel,
			"backoffLimitPerIndex": 3,
			"podFailurePolicy": obj{"rules": []obj{
				{"action": "FailIndex", "onExitCodes": obj{"containerName": "train", "operator": "In", "values": []int{2}}},
				{"action": "Ignore", "onPodConditions": []obj{{"type": "DisruptionTarget"}}},
			}},
			"template": obj{"spec": obj{
				"restartPolicy":                 "Never",
				"terminationGracePeriodSeconds": 120,
				"containers": []obj{{
					"name":         "train",
					"image":        c.Image,
					"command":      command,
					"workingDir":   c.Mount, // the spec's relative paths (a teacher's, an -init's) are the claim's
					"env":          []obj{{"name": ShardsEnv, "value": strconv.Itoa(n)}},
					"resources":    obj{"requests": resources, "limits": resources},
					"volumeMounts": []obj{{"name": "sweep", "mountPath": c.Mount}},
				}},
				"volumes": []obj{{"name": "sweep", "persistentVolumeClaim": obj{"claimName": c.Claim}}},
			}},
		},
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Sweep %s: %d runs of %s, %s.\n", jsonQuote(p.Spec.Name), len(p.Runs), jsonQuote(path.Base(c.Spec)), perTask(p, n, "completion index"))
	fmt.Fprintf(&b, "# The image holds the train binary; the claim %s holds the spec at its root and receives the run\n", jsonQuote(c.Claim))
	fmt.Fprintf(&b, "# folders under %s. kubectl apply -f THIS_FILE; afterwards train aggregate on that folder.\n", jsonQuote(out))
	fmt.Fprintf(&b, "# Each pod works in %s, the claim's root: relative paths in the spec (a teacher, -init) are the claim's.\n", jsonQuote(c.Mount))
	b.WriteString("# Exit code 2 (bad input) fails its index at once: the same index would fail again. A pod evicted or\n")
	b.WriteString("# preempted (DisruptionTarget) is replaced without counting as a failure and resumes from the checkpoints.\n")
	b.WriteString("# On SIGTERM every running run writes its checkpoint (terminationGracePeriodSeconds). Kubernetes sets\n")
	fmt.Fprintf(&b, "# JOB_COMPLETION_INDEX; %s is the Job's completions. JSON, which is YAML too.\n", ShardsEnv)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(job); err != nil {
		return "", err
	}
	return b.String(), nil
}

// obj is a JSON object of a manifest (encoding/json sorts its keys).
type obj = map[string]any

// jsonQuote is s as a JSON (and YAML) string.
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// jobName is a valid Slurm job name and Kubernetes object name (RFC 1123:
// lower-case letters, digits and '-', at most 63 characters).
func jobName(name string) string {
	s := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower("sweep-"+name), "-"), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}
