package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
)

// State is what a run's folder holds.
type State string

// The states of a run folder.
const (
	New       State = "new"       // no folder, or one without a checkpoint: the run starts from step 0
	Resumable State = "resumable" // a checkpoint and no summary.json: the run resumes
	Done      State = "done"      // summary.json: the run completed
	Stalled   State = "stalled"   // summary.json of a run that stopped without progress (trainers.ErrStalled)
)

// State reads the run's folder. A folder holding another configuration
// (config.json differs, its folder aside) is an error.
func (r Run) State() (State, error) {
	data, err := os.ReadFile(filepath.Join(r.Dir, experiment.ConfigFile))
	if os.IsNotExist(err) {
		return New, nil
	}
	if err != nil {
		return "", err
	}
	var c experiment.Config
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("run %d: %s: %v", r.Index, filepath.Join(r.Dir, experiment.ConfigFile), err)
	}
	if id, _ := Identity(c); id != mustIdentity(r.Config) {
		return "", fmt.Errorf("run %d: folder %s holds another configuration (its config.json differs): move it away, or give the sweep another out", r.Index, r.Dir)
	}
	if s, err := ReadSummary(r.Dir); err == nil {
		if s.Stalled {
			return Stalled, nil
		}
		return Done, nil
	}
	if _, err := os.Stat(filepath.Join(r.Dir, experiment.CheckpointFile)); err == nil {
		return Resumable, nil
	}
	return New, nil
}

func mustIdentity(c experiment.Config) string {
	id, _ := Identity(c)
	return id
}

// ReadSummary reads a run folder's summary.json.
func ReadSummary(dir string) (experiment.Summary, error) {
	var s experiment.Summary
	data, err := os.ReadFile(filepath.Join(dir, experiment.SummaryFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s does not parse: %v", filepath.Join(dir, experiment.SummaryFile), err)
	}
	s.Out = dir
	return s, nil
}

// IndexFile is the sweep's index in its folder: the spec and every run's
// index, name and settings. Aggregate reads it to know which runs to
// expect.
const IndexFile = "sweep.json"

// Index is IndexFile's content.
type Index struct {
	Name string       `json:"name"`
	Runs []IndexEntry `json:"runs"`
}

// IndexEntry is one run in the index.
type IndexEntry struct {
	Index    int               `json:"index"`
	Name     string            `json:"name"` // the folder's name under the sweep's folder
	Settings map[string]string `json:"settings"`
	// Config is the resolved configuration without its folder, so that a
	// run never started still has its group in the aggregate.
	Config json.RawMessage `json:"config"`
	sweep  int             // Collect: which sweep listed it first
}

// WriteIndex writes the plan's index into its folder (atomically: shards
// writing the same index at once are safe).
func (p *Plan) WriteIndex() error {
	ix := Index{Name: p.Spec.Name}
	for _, r := range p.Runs {
		id, _ := Identity(r.Config)
		e := IndexEntry{Index: r.Index, Name: r.Name, Settings: map[string]string{}, Config: json.RawMessage(id)}
		for _, s := range r.Settings {
			e.Settings[s.Path] = compact(s.Value)
		}
		ix.Runs = append(ix.Runs, e)
	}
	data, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.Out, 0o755); err != nil {
		return fmt.Errorf("out %s: %v", p.Out, err)
	}
	return checkpoints.WriteFileAtomic(filepath.Join(p.Out, IndexFile), append(data, '\n'))
}

// ReadIndex reads a sweep folder's index.
func ReadIndex(dir string) (*Index, error) {
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, IndexFile), err)
	}
	return &ix, nil
}
