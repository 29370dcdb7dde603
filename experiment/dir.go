package experiment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// The files of a run folder.
const (
	CheckpointFile = "checkpoint.bin"
	ConfigFile     = "config.json"
	SummaryFile    = "summary.json"
	JSONLFile      = "metrics.jsonl"
	MetricsFile    = "metrics.csv"
	abcdFile       = "abcd.csv"
	vocabFile      = "vocab.txt"
	lockFile       = ".lock"
	abcdHeader     = "step,depth,a,b,c,d,a_per_copy,b_per_copy,c_per_copy,d_per_copy"
)

// products are the files of a finished run: removed first, so an
// interrupted new run never looks complete.
var products = []string{SummaryFile, "hitting_time.png", "abcd.png", "invalid_mass.png"}

// folder writes a run folder: config.json, vocab.txt, metrics.csv,
// metrics.jsonl, abcd.csv, the checkpoint, then the plots and summary.json
// at the end.
type folder struct {
	dir                  string
	metrics, jsonl, abcd *os.File
	mw, jw, aw           *bufio.Writer
	initialHitting       float64        // of step 0, from this session or the kept rows
	wall                 func() float64 // seconds spent on the run
	applies                             // which columns apply to the trainer
	tb                   *events        // TensorBoard's event file (nil: none)
}

// openFolder prepares dir: a fresh run clears what an earlier run left; a
// resumed run (resumeStep >= 0) keeps the metrics of the steps before its
// checkpoint. A folder holding another run is refused unless force.
func openFolder(dir string, cfgJSON []byte, resumeStep int, force bool, a applies, tensorboard bool) (*folder, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, inputf("out %s: exists and is not a folder", dir)
	}
	if resumeStep < 0 && !force {
		if old, err := os.ReadFile(filepath.Join(dir, ConfigFile)); err == nil {
			if !sameRun(old, cfgJSON) {
				return nil, inputf("-out %s holds another run (its config.json differs): choose another -out, or -force to replace it", dir)
			}
		} else if entries, err := os.ReadDir(dir); err == nil && (len(entries) > 1 || len(entries) == 1 && entries[0].Name() != lockFile) {
			return nil, inputf("-out %s is a non-empty folder that is not a run folder: choose another -out, or -force", dir)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, inputf("out %s: %v", dir, err)
	}
	// Temporary files of writes a killed process never renamed.
	if stale, err := filepath.Glob(filepath.Join(dir, ".*.tmp*")); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	for _, f := range products {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if resumeStep < 0 {
		if err := os.Remove(filepath.Join(dir, CheckpointFile)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if err := checkpoints.WriteFileAtomic(filepath.Join(dir, ConfigFile), append(cfgJSON, '\n')); err != nil {
		return nil, err
	}
	f := &folder{dir: dir, initialHitting: math.NaN(), applies: a}
	var err error
	var kept [][]string
	if f.metrics, kept, err = reopenCSV(filepath.Join(dir, MetricsFile), metricsHeader(), resumeStep); err != nil {
		return nil, err
	}
	for _, rec := range kept {
		if len(rec) > 1 && rec[0] == "0" {
			f.initialHitting, _ = strconv.ParseFloat(rec[1], 64)
		}
	}
	if f.abcd, _, err = reopenCSV(filepath.Join(dir, abcdFile), abcdHeader, resumeStep); err != nil {
		return nil, err
	}
	if f.jsonl, err = reopenJSONL(filepath.Join(dir, JSONLFile), resumeStep); err != nil {
		return nil, err
	}
	f.mw, f.jw, f.aw = bufio.NewWriter(f.metrics), bufio.NewWriter(f.jsonl), bufio.NewWriter(f.abcd)
	if tensorboard {
		if f.tb, err = openEvents(dir, resumeStep); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// reopenJSONL rewrites path with the rows whose step is below keep (none
// when keep < 0), as reopenCSV does, and opens it for appending.
func reopenJSONL(path string, keep int) (*os.File, error) {
	var buf bytes.Buffer
	if keep >= 0 {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		lines := strings.Split(string(data), "\n")
		for _, line := range lines[:len(lines)-1] { // complete lines only
			var row struct {
				Step *int `json:"step"`
			}
			if json.Unmarshal([]byte(line), &row) == nil && row.Step != nil && *row.Step < keep {
				buf.WriteString(line + "\n")
			}
		}
	}
	if err := checkpoints.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
}

// reopenCSV rewrites path with its header and the rows whose step is below
// keep (none when keep < 0), and opens it for appending.
func reopenCSV(path, header string, keep int) (*os.File, [][]string, error) {
	var buf bytes.Buffer
	buf.WriteString(header + "\n")
	var kept [][]string
	if keep >= 0 {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return nil, nil, err
		}
		// Only complete lines count: a process killed mid-write leaves a
		// partial last line, which must not pass for a row.
		lines := strings.Split(string(data), "\n")
		fields := strings.Count(header, ",") + 1
		for i, line := range lines[:len(lines)-1] {
			rec := strings.Split(line, ",")
			if i == 0 || len(rec) != fields {
				continue
			}
			if step, err := strconv.Atoi(rec[0]); err == nil && step < keep {
				buf.WriteString(line + "\n")
				kept = append(kept, rec)
			}
		}
	}
	if err := checkpoints.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	return f, kept, err
}

// write appends one row to metrics.csv and its depths to abcd.csv, flushed
// at once: an interrupted run keeps its metrics.
func (f *folder) write(row trainers.Row) error {
	if row.Step == 0 {
		f.initialHitting = row.HittingTime
	}
	r := &record{Row: row, applies: f.applies, wall: math.NaN()}
	if f.wall != nil {
		r.wall = f.wall()
	}
	fmt.Fprintln(f.mw, format(r))
	fmt.Fprintln(f.jw, formatJSON(r))
	if f.tb != nil {
		tags, values := scalars(r)
		if err := f.tb.write(row.Step, tags, values); err != nil {
			return err
		}
	}
	for i, d := range row.Depths {
		c := row.CopyDepths[i]
		fmt.Fprintf(f.aw, "%d,%d,%s,%s,%s,%s,%s,%s,%s,%s\n", row.Step, d.Depth, f64(d.A), f64(d.B), f64(d.C), f64(d.D),
			f64(c.A), f64(c.B), f64(c.C), f64(c.D))
	}
	for _, w := range []*bufio.Writer{f.mw, f.jw} {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return f.aw.Flush()
}

// f64 formats a float exactly (shortest round-trip form); NaN is empty.
func f64(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func (f *folder) close() {
	f.mw.Flush()
	f.jw.Flush()
	f.aw.Flush()
	f.metrics.Close()
	f.jsonl.Close()
	f.abcd.Close()
	if f.tb != nil {
		f.tb.close()
	}
}

// finish writes the plots, then summary.json last. An abcd.csv with no
// rows (a model without an exact analysis) is removed rather than left
// holding its header only.
func (f *folder) finish(s Summary) error {
	if err := f.mw.Flush(); err != nil {
		return err
	}
	if err := f.jw.Flush(); err != nil {
		return err
	}
	if err := f.aw.Flush(); err != nil {
		return err
	}
	if a, err := ReadMetrics(filepath.Join(f.dir, abcdFile)); err == nil && len(a.Rows) == 0 {
		if err := os.Remove(filepath.Join(f.dir, abcdFile)); err != nil {
			return err
		}
	}
	if err := writePlots(f.dir, s); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	return checkpoints.WriteFileAtomic(filepath.Join(f.dir, SummaryFile), append(b, '\n'))
}

// writeVocab writes the run's token vocabulary, vocab.txt: the names behind
// the token ids of the checkpoint's rows, and which ids are model rows.
func writeVocab(dir string, v *tokenizer.Vocab) error {
	data, err := vocabBytes(v)
	if err != nil {
		return err
	}
	return checkpoints.WriteFileAtomic(filepath.Join(dir, vocabFile), data)
}

// vocabBytes is vocab.txt's content for v.
func vocabBytes(v *tokenizer.Vocab) ([]byte, error) {
	var buf bytes.Buffer
	_, err := v.WriteTo(&buf)
	return buf.Bytes(), err
}

// checkVocab refuses to resume a folder whose vocab.txt is not the one the
// run writes: the token names a reader maps the checkpoint's rows by would
// be wrong (the file was edited, truncated or copied from another run). A
// folder without vocab.txt (deleted by hand) is given a new one.
func checkVocab(dir string, v *tokenizer.Vocab) error {
	path := filepath.Join(dir, vocabFile)
	onDisk, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return &InputError{err}
	}
	want, err := vocabBytes(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(onDisk, want) {
		return inputf("%s is not this run's vocabulary (edited, truncated or from another run?): delete it and resume to rewrite it", path)
	}
	return nil
}

// firstMissing is the outermost folder on the way to dir that does not
// exist yet (dir itself when only it is missing), or "" when dir exists:
// what creating dir would create.
func firstMissing(dir string) string {
	dir = filepath.Clean(dir)
	missing := ""
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			return missing
		}
		missing = d
		if filepath.Dir(d) == d {
			return missing
		}
	}
}

// removeEmpty removes dir and its parents up to top while they are empty.
func removeEmpty(dir, top string) {
	dir, top = filepath.Clean(dir), filepath.Clean(top)
	for d := dir; os.Remove(d) == nil && d != top; d = filepath.Dir(d) {
	}
}
