package sweep

import (
	"slices"
	"testing"
)

// TestLabelShowsEverySetting: the summary's columns separate the groups
// and also show every setting the sweep varies within a task (a table rate
// changed together with the rate in one entry of a list), but not the
// options a model or trainer implies (a trainer's log_every).
func TestLabelShowsEverySetting(t *testing.T) {
	cols := []string{"model", "trainer", "graph", "lr", "log_every", "transformer.table_lr", "seed"}
	group := func(trainer, lr, logEvery, table string) *Group {
		return &Group{Fields: map[string]string{"model": "transformer", "trainer": trainer, "graph": "W=15,K=15,L=5",
			"lr": lr, "log_every": logEvery, "transformer.table_lr": table, "seed": "1"}}
	}
	groups := []*Group{group("ppo", "0.0003", "10", "0.025"), group("ppo", "0.001", "10", "0.025"), group("ppo", "0.003", "10", "0.05"),
		group("grpo", "0.0003", "50", "0.025")}
	got := distinguishing(groups, cols)
	if want := []string{"trainer", "lr", "transformer.table_lr"}; !slices.Equal(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
}
