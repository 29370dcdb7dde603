package sweep

import (
	"strings"
	"testing"
)

// TestShardFromEnv: a Slurm task of the printed script (which sets
// ShardsEnv) trains shard SLURM_ARRAY_TASK_ID of it whatever part of the
// array was submitted; without ShardsEnv the array as submitted is the
// sweep; every refusal gives advice that applies inside an array.
func TestShardFromEnv(t *testing.T) {
	slurm := func(id, lo, hi, count string) []string {
		return []string{"SLURM_ARRAY_TASK_ID", id, "SLURM_ARRAY_TASK_MIN", lo, "SLURM_ARRAY_TASK_MAX", hi, "SLURM_ARRAY_TASK_COUNT", count}
	}
	shards := func(n string, env []string) []string { return append([]string{ShardsEnv, n}, env...) }
	for _, c := range []struct {
		name string
		env  []string
		want Shard
		err  string
	}{
		{"none", nil, All, ""},
		{"whole array", shards("4", slurm("2", "0", "3", "4")), Shard{2, 4}, ""},
		{"one task resubmitted", shards("4", slurm("3", "3", "3", "1")), Shard{3, 4}, ""},
		{"a range resubmitted", shards("4", slurm("3", "2", "3", "2")), Shard{3, 4}, ""},
		{"a list resubmitted", shards("4", slurm("1", "1", "3", "2")), Shard{1, 4}, ""},
		{"task beyond the shards", shards("4", slurm("5", "0", "5", "6")), Shard{}, "SLURM_ARRAY_TASK_ID=5 of TRAIN_SWEEP_SHARDS=4: want 0 <= i < n"},
		{"bad shards", shards("four", slurm("1", "0", "3", "4")), Shard{}, `TRAIN_SWEEP_SHARDS="four": want an integer`},
		{"own script, range", slurm("3", "2", "3", "2"), Shard{1, 2}, ""},
		{"own script, count only", []string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "3"}, Shard{1, 3}, ""},
		{"own script, list", slurm("3", "1", "3", "2"), Shard{}, "slurm array 1-3 has 2 tasks (a step or a list of indices) and TRAIN_SWEEP_SHARDS is not set: set it to the number of shards"},
		{"own script, no bounds", []string{"SLURM_ARRAY_TASK_ID", "1"}, Shard{}, "set TRAIN_SWEEP_SHARDS to the number of shards"},
		{"k8s", []string{"JOB_COMPLETION_INDEX", "2", ShardsEnv, "3"}, Shard{2, 3}, ""},
		{"k8s without count", []string{"JOB_COMPLETION_INDEX", "2"}, Shard{}, "JOB_COMPLETION_INDEX=2 but TRAIN_SWEEP_SHARDS is not set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for i := 0; i < len(c.env); i += 2 {
				env[c.env[i]] = c.env[i+1]
			}
			s, _, _, err := ShardFromEnv(func(k string) string { return env[k] })
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("got %v, %v; want an error with %q", s, err, c.err)
			case c.err != "":
				if strings.Contains(err.Error(), "-shard") {
					t.Errorf("%v: advises -shard, which an array task refuses", err)
				}
			case err != nil || s != c.want:
				t.Errorf("got %v, %v; want %v", s, err, c.want)
			}
		})
	}
}

// TestPerTask: the job files' header says how the runs are split, in
// English ("2 array tasks", "2 completion indexes").
func TestPerTask(t *testing.T) {
	p := plan(t, `{"grid": {"train.seed": [1, 2, 3, 4]}}`, t.TempDir())
	for _, c := range []struct {
		unit  string
		tasks int
		want  string
	}{
		{"array task", 4, "one array task per run (array task i trains run i)"},
		{"array task", 2, "2 array tasks, each a shard of the runs (array task i trains the runs whose index is i modulo 2)"},
		{"completion index", 2, "2 completion indexes, each a shard"},
	} {
		if got := perTask(p, c.tasks, c.unit); !strings.HasPrefix(got, c.want) {
			t.Errorf("%d %s: got %q, want %q", c.tasks, c.unit, got, c.want)
		}
	}
}
