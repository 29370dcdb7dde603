package sweep

import (
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
	return fmt.Sprintf("%d %ses, each a shard of the runs (%s i trains the runs whose index is i modulo %d)", tasks, unit, unit, tasks)
}

// quote makes a word safe for a shell.
func quote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./:=+-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SlurmScript is an sbatch script running the plan as a job array. Slurm
// sends USR1 to the batch shell 120 s before the time limit
// (--signal=B:USR1@120): the shell passes SIGTERM to train, whose runs
// write their checkpoints, and requeues the task (--requeue), which then
// resumes them. A plain SIGTERM (scancel) stops the runs the same way
// without requeueing.
func SlurmScript(p *Plan, c Cluster) string {
	n := c.tasks(p)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "# Sweep %s: %d runs of %s, %s.\n", p.Spec.Name, len(p.Runs), c.Spec, perTask(p, n, "array task"))
	fmt.Fprintf(&b, "# Submit with: sbatch THIS_FILE. Afterwards: %s aggregate %s\n", c.Binary, p.Out)
	fmt.Fprintf(&b, "# A task run again (requeued, or the script submitted again) skips finished runs and resumes the others\n")
	fmt.Fprintf(&b, "# from their checkpoints; train sweep reads its shard from SLURM_ARRAY_TASK_ID.\n")
	directive := func(format string, args ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", args...) }
	directive("--job-name=%s", jobName(p.Spec.Name))
	array := fmt.Sprintf("0-%d", n-1)
	if c.Parallel > 0 {
		array += "%" + strconv.Itoa(c.Parallel)
	}
	directive("--array=%s", array)
	directive("--ntasks=1")
	directive("--cpus-per-task=%d", c.cpus())
	if c.Mem != "" {
		directive("--mem=%s", c.Mem)
	}
	if c.Time != "" {
		directive("--time=%s", c.Time)
	}
	if c.Partition != "" {
		directive("--partition=%s", c.Partition)
	}
	directive("--chdir=%s", c.Dir)
	directive("--output=%s", path.Join(p.Out, "slurm-%A_%a.out"))
	directive("--open-mode=append")
	directive("--signal=B:USR1@120")
	directive("--requeue")
	fmt.Fprintf(&b, "\n%s sweep %s -out %s -jobs %d &\n", quote(c.Binary), quote(c.Spec), quote(p.Out), c.cpus())
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
	return b.String()
}

// KubernetesJob is an Indexed Job manifest running the plan: completion
// index i trains shard i of the Job's completions (ShardsEnv). A failed
// pod is replaced by one with the same index (backoffLimitPerIndex), which
// resumes its runs; a pod evicted or preempted is replaced without
// counting as a failure, and bad input (exit 2) fails its index at once.
func KubernetesJob(p *Plan, c Cluster) string {
	n := c.tasks(p)
	parallel := n
	if c.Parallel > 0 {
		parallel = min(c.Parallel, n)
	}
	mount := c.Mount
	if mount == "" {
		mount = "/sweep"
	}
	out := p.Out
	if path.IsAbs(out) {
		out = path.Base(out)
	}
	args := []string{c.Binary, "sweep", path.Join(mount, path.Base(c.Spec)), "-out", path.Join(mount, out), "-jobs", strconv.Itoa(c.cpus())}
	for i, a := range args {
		args[i] = strconv.Quote(a)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Sweep %s: %d runs of %s, %s.\n", p.Spec.Name, len(p.Runs), path.Base(c.Spec), perTask(p, n, "completion index"))
	fmt.Fprintf(&b, "# The image holds the train binary; the claim %s holds the spec at its root and receives the run\n", c.Claim)
	fmt.Fprintf(&b, "# folders under %s. kubectl apply -f THIS_FILE; afterwards train aggregate on that folder.\n", out)
	fmt.Fprintf(&b, `apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  completionMode: Indexed
  completions: %d
  parallelism: %d
  backoffLimitPerIndex: 3
  podFailurePolicy:
    rules:
    - action: FailIndex # bad input (exit 2): the same index would fail again
      onExitCodes:
        containerName: train
        operator: In
        values: [2]
    - action: Ignore # evicted or preempted: the replacement pod resumes from the checkpoints
      onPodConditions:
      - type: DisruptionTarget
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 120 # SIGTERM: every running run writes its checkpoint
      containers:
      - name: train
        image: %s
        command: [%s]
        env:
        - name: %s # JOB_COMPLETION_INDEX is set by Kubernetes; this is the Job's completions
          value: "%d"
        resources:
          requests:
            cpu: "%d"%s
          limits:
            cpu: "%d"%s
        volumeMounts:
        - name: sweep
          mountPath: %s
      volumes:
      - name: sweep
        persistentVolumeClaim:
          claimName: %s
`, jobName(p.Spec.Name), n, parallel, c.Image, strings.Join(args, ", "), ShardsEnv, n,
		c.cpus(), memLine(c.Mem), c.cpus(), memLine(c.Mem), mount, c.Claim)
	return b.String()
}

func memLine(mem string) string {
	if mem == "" {
		return ""
	}
	return "\n            memory: " + mem
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
