package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is slice I of N of a sweep: the runs whose index is I modulo N.
// Round robin spreads a sweep's sizes and learners evenly over the shards
// (consecutive indices differ in the fastest grid path, usually the seed).
type Shard struct{ I, N int }

// All is the whole sweep.
var All = Shard{0, 1}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Has reports whether the run with this index is in the shard.
func (s Shard) Has(index int) bool { return index%s.N == s.I }

// ShardsEnv is the variable that gives the number of shards to a job
// array's tasks. A Kubernetes Indexed Job's pods get their own index in
// JOB_COMPLETION_INDEX but not the Job's completions; a Slurm task gets
// the bounds of the array as submitted, which are not the sweep's when
// some of its tasks are submitted again (sbatch --array=3). The printed
// manifest and sbatch script set it, so task i trains shard i of it
// whatever part of the array runs.
const ShardsEnv = "TRAIN_SWEEP_SHARDS"

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4", s)
	}
	return checkShard(Shard{i, n}, fmt.Sprintf("shard %s", s))
}

func checkShard(s Shard, where string) (Shard, error) {
	if s.N < 1 || s.I < 0 || s.I >= s.N {
		return Shard{}, fmt.Errorf("%s: want 0 <= i < n (i = %d, n = %d)", where, s.I, s.N)
	}
	return s, nil
}

// ShardFromEnv finds the shard of a job-array task in its environment
// (getenv is os.Getenv in the command):
//   - Slurm: SLURM_ARRAY_TASK_ID, shard ID of ShardsEnv when it is set (the
//     printed script sets it); else of the array as submitted:
//     SLURM_ARRAY_TASK_MIN and _MAX (shard ID-MIN of MAX-MIN+1), or else
//     SLURM_ARRAY_TASK_COUNT (shard ID of COUNT);
//   - Kubernetes Indexed Job: JOB_COMPLETION_INDEX, of ShardsEnv.
//
// ok is false when neither index is set (the whole sweep).
func ShardFromEnv(getenv func(string) string) (s Shard, source string, ok bool, err error) {
	num := func(name string) (int, bool, error) {
		v := getenv(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, true, fmt.Errorf("%s=%q: want an integer", name, v)
		}
		return n, true, nil
	}
	for _, name := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"} {
		id, set, err := num(name)
		if err != nil {
			return s, "", true, err
		}
		if !set {
			continue
		}
		source = fmt.Sprintf("%s=%d", name, id)
		n, hasN, err := num(ShardsEnv)
		switch {
		case err != nil:
			return s, source, true, err
		case hasN:
			s, err = checkShard(Shard{id, n}, fmt.Sprintf("%s of %s=%d", source, ShardsEnv, n))
			return s, source, true, err
		case name == "SLURM_ARRAY_TASK_ID":
			s, err = slurmArrayShard(id, source, num)
			return s, source, true, err
		}
		return s, source, true, fmt.Errorf("%s but %s is not set: set it to the Job's completions (the manifest of -print k8s does)", source, ShardsEnv)
	}
	return All, "", false, nil
}

// slurmArrayShard is the shard of Slurm array task id when the count of
// shards is not given: the array as submitted is taken to be the whole
// sweep, so it must be a plain range.
func slurmArrayShard(id int, source string, num func(string) (int, bool, error)) (Shard, error) {
	lo, hasLo, err1 := num("SLURM_ARRAY_TASK_MIN")
	hi, hasHi, err2 := num("SLURM_ARRAY_TASK_MAX")
	count, hasCount, err3 := num("SLURM_ARRAY_TASK_COUNT")
	for _, e := range []error{err1, err2, err3} {
		if e != nil {
			return Shard{}, e
		}
	}
	var s Shard
	switch {
	case hasLo && hasHi:
		if hasCount && count != hi-lo+1 {
			return Shard{}, fmt.Errorf("slurm array %d-%d has %d tasks (a step or a list of indices) and %s is not set: set it to the number of shards (the script of -print slurm does), or submit a plain range", lo, hi, count, ShardsEnv)
		}
		s = Shard{id - lo, hi - lo + 1}
	case hasCount:
		s = Shard{id, count}
	default:
		return Shard{}, fmt.Errorf("%s without SLURM_ARRAY_TASK_MIN/MAX or SLURM_ARRAY_TASK_COUNT: set %s to the number of shards (the script of -print slurm does)", source, ShardsEnv)
	}
	return checkShard(s, source)
}
