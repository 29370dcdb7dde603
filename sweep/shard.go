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

// ShardsEnv is the variable that gives the number of shards to a Kubernetes
// Indexed Job's pods, which get their own index in JOB_COMPLETION_INDEX but
// not the Job's completions (the printed manifest sets it).
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
//   - Slurm: SLURM_ARRAY_TASK_ID, with SLURM_ARRAY_TASK_MIN and _MAX
//     (shard ID-MIN of MAX-MIN+1), or else SLURM_ARRAY_TASK_COUNT (shard ID
//     of COUNT);
//   - Kubernetes Indexed Job: JOB_COMPLETION_INDEX, with ShardsEnv.
//
// ok is false when neither is set (the whole sweep).
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
	if id, set, err := num("SLURM_ARRAY_TASK_ID"); set || err != nil {
		if err != nil {
			return s, "", true, err
		}
		lo, hasLo, err1 := num("SLURM_ARRAY_TASK_MIN")
		hi, hasHi, err2 := num("SLURM_ARRAY_TASK_MAX")
		count, hasCount, err3 := num("SLURM_ARRAY_TASK_COUNT")
		for _, e := range []error{err1, err2, err3} {
			if e != nil {
				return s, "", true, e
			}
		}
		source = fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", id)
		switch {
		case hasLo && hasHi:
			if hasCount && count != hi-lo+1 {
				return s, source, true, fmt.Errorf("slurm array %d-%d has %d tasks (a step or a list of indices): use a plain range, --array=0-%d, or give -shard", lo, hi, count, count-1)
			}
			s = Shard{id - lo, hi - lo + 1}
		case hasCount:
			s = Shard{id, count}
		default:
			return s, source, true, fmt.Errorf("%s without SLURM_ARRAY_TASK_MIN/MAX or SLURM_ARRAY_TASK_COUNT: give -shard i/n", source)
		}
		s, err = checkShard(s, source)
		return s, source, true, err
	}
	if id, set, err := num("JOB_COMPLETION_INDEX"); set || err != nil {
		if err != nil {
			return s, "", true, err
		}
		source = fmt.Sprintf("JOB_COMPLETION_INDEX=%d", id)
		n, hasN, err := num(ShardsEnv)
		if err != nil {
			return s, source, true, err
		}
		if !hasN {
			return s, source, true, fmt.Errorf("%s but %s is not set: set it to the Job's completions (the manifest of -print k8s does), or give -shard i/n", source, ShardsEnv)
		}
		s, err = checkShard(Shard{id, n}, fmt.Sprintf("%s of %s=%d", source, ShardsEnv, n))
		return s, source, true, err
	}
	return All, "", false, nil
}
