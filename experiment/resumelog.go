package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
)

// logRows are the complete, well-formed rows of one metrics log by step,
// as lines of that log (without the newline).
type logRows map[int]string

// checkLogs makes sure a run folder about to resume from its checkpoint at
// step keep still holds every metrics row logged before it: the rows of
// steps 0, every, 2 every, ... below keep (trainers.Trainer.Run logs step 0,
// every LogEvery steps and the last; a last step below keep was a finished
// run's end, which its resume does not keep). metrics.csv and
// metrics.jsonl hold the same rows: when one of them lacks rows (truncated,
// deleted or edited by hand) that the other holds, it is rebuilt from the
// other and warn is told which (warn nil: refused instead). When both lack
// a row, or abcd.csv lacks the depths of a row that has a, b, c, d, the
// resume is refused with an InputError naming the file: a row is never
// dropped silently, so summary.json's initial hitting time and the plots
// still start at step 0.
func checkLogs(dir string, keep, every int, warn func(string)) error {
	var want []int
	for s := 0; s < keep; s += max(every, 1) {
		want = append(want, s)
	}
	if len(want) == 0 {
		return nil
	}
	csvPath, jsonPath := filepath.Join(dir, MetricsFile), filepath.Join(dir, JSONLFile)
	csvRows, err := readCSVRows(csvPath)
	if err != nil {
		return err
	}
	jsonRows, err := readJSONRows(jsonPath)
	if err != nil {
		return err
	}
	csvLacks, jsonLacks, bothLack := lacking(want, csvRows), lacking(want, jsonRows), []int{}
	for _, s := range csvLacks {
		if _, ok := jsonRows[s]; !ok {
			bothLack = append(bothLack, s)
		}
	}
	if len(bothLack) > 0 {
		return inputf("cannot resume %s: %s and %s both lack the metrics row of step %d%s, logged before the checkpoint's step %d: restore either file, or start the run over (-force)",
			dir, MetricsFile, JSONLFile, bothLack[0], more(len(bothLack)-1, "other"), keep)
	}
	rows := csvRows
	if len(csvLacks) > 0 {
		rows = merged(csvRows, jsonRows, csvLacks, jsonToCSV)
	}
	if err := checkABCD(dir, want, keep, rows); err != nil {
		return err
	}
	for _, fix := range []struct {
		path, from string
		lacks      []int
		rebuild    func() error
	}{
		{csvPath, JSONLFile, csvLacks, func() error { return writeRows(csvPath, metricsHeader(), rows) }},
		{jsonPath, MetricsFile, jsonLacks, func() error {
			return writeRows(jsonPath, "", merged(jsonRows, csvRows, jsonLacks, csvToJSON))
		}},
	} {
		if len(fix.lacks) == 0 {
			continue
		}
		msg := fmt.Sprintf("%s lacked %d of the %d metrics rows logged before the checkpoint's step %d (truncated, deleted or edited?): rebuilt from %s",
			fix.path, len(fix.lacks), len(want), keep, fix.from)
		if warn == nil {
			return inputf("cannot resume %s: %s lacks %d of the %d metrics rows logged before the checkpoint's step %d; %s holds them: restore it from there",
				dir, MetricsFile, len(fix.lacks), len(want), keep, fix.from)
		}
		if err := fix.rebuild(); err != nil {
			return err
		}
		warn(msg)
	}
	return nil
}

// more says how many more there are ("" for none).
func more(n int, what string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d %s)", n, what)
}

// lacking lists the steps of want that rows does not hold.
func lacking(want []int, rows logRows) []int {
	var out []int
	for _, s := range want {
		if _, ok := rows[s]; !ok {
			out = append(out, s)
		}
	}
	return out
}

// merged is rows with the steps it lacks taken from other, converted.
func merged(rows, other logRows, lacks []int, convert func(string) string) logRows {
	out := logRows{}
	for s, line := range rows {
		out[s] = line
	}
	for _, s := range lacks {
		out[s] = convert(other[s])
	}
	return out
}

// writeRows rewrites path with header (none if "") and rows in step order.
func writeRows(path, header string, rows logRows) error {
	var b bytes.Buffer
	if header != "" {
		b.WriteString(header + "\n")
	}
	steps := make([]int, 0, len(rows))
	for s := range rows {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	for _, s := range steps {
		b.WriteString(rows[s] + "\n")
	}
	return checkpoints.WriteFileAtomic(path, b.Bytes())
}

// completeLines reads path's newline-terminated lines (a line a killed
// process left unfinished is not one); a missing file has none.
func completeLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &InputError{err}
	}
	lines := strings.Split(string(data), "\n")
	return lines[:len(lines)-1], nil
}

// readCSVRows reads metrics.csv's rows: none unless its header is this
// version's (the columns would be misread).
func readCSVRows(path string) (logRows, error) {
	lines, err := completeLines(path)
	if err != nil || len(lines) == 0 || lines[0] != metricsHeader() {
		return logRows{}, err
	}
	rows := logRows{}
	for _, line := range lines[1:] {
		rec := strings.Split(line, ",")
		if len(rec) != len(columns) {
			continue
		}
		if step, err := strconv.Atoi(rec[0]); err == nil {
			rows[step] = line
		}
	}
	return rows, nil
}

// readJSONRows reads metrics.jsonl's rows: objects with every column.
func readJSONRows(path string) (logRows, error) {
	lines, err := completeLines(path)
	if err != nil {
		return logRows{}, err
	}
	rows := logRows{}
	for _, line := range lines {
		obj, ok := jsonRow(line)
		if !ok {
			continue
		}
		if step, err := strconv.Atoi(string(obj["step"])); err == nil {
			rows[step] = line
		}
	}
	return rows, nil
}

// jsonRow decodes one metrics.jsonl line, which must hold every column.
func jsonRow(line string) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &obj) != nil {
		return nil, false
	}
	for _, c := range columns {
		if _, ok := obj[c.name]; !ok {
			return nil, false
		}
	}
	return obj, true
}

// csvToJSON is a metrics.csv row as metrics.jsonl writes it (formatJSON):
// the same cells, null where a cell is empty.
func csvToJSON(line string) string { return jsonLine(strings.Split(line, ",")) }

// jsonToCSV is a metrics.jsonl row as metrics.csv writes it: the same
// digits, an empty cell where the value is null.
func jsonToCSV(line string) string {
	obj, _ := jsonRow(line)
	cells := make([]string, len(columns))
	for i, c := range columns {
		if v := string(obj[c.name]); v != "null" {
			cells[i] = v
		}
	}
	return strings.Join(cells, ",")
}

// checkABCD refuses a resume whose abcd.csv lacks the depths of a kept
// metrics row that has a, b, c, d (an exact analysis logs one abcd.csv row
// per depth with each metrics row): abcd.csv has no other copy to rebuild
// it from.
func checkABCD(dir string, want []int, keep int, rows logRows) error {
	a := slices.Index(MetricsColumns(), "a")
	path := filepath.Join(dir, abcdFile)
	lines, err := completeLines(path)
	if err != nil {
		return err
	}
	depths := map[int]int{} // rows per step
	for i, line := range lines {
		rec := strings.Split(line, ",")
		if i == 0 || len(rec) != strings.Count(abcdHeader, ",")+1 {
			continue
		}
		if step, err := strconv.Atoi(rec[0]); err == nil {
			depths[step]++
		}
	}
	for _, s := range want {
		if strings.Split(rows[s], ",")[a] == "" {
			continue // no a, b, c, d: a model without an exact analysis
		}
		if depths[s] == 0 || depths[s] != depths[0] {
			return inputf("cannot resume %s: %s lacks the a, b, c, d rows of step %d, logged before the checkpoint's step %d (truncated, deleted or edited?), and has no other copy: restore it, or start the run over (-force)",
				dir, abcdFile, s, keep)
		}
	}
	return nil
}
