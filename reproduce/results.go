package reproduce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
)

// ResultsFile is the table of a reproduction folder: one row per entry
// that ran into it, by any call of train reproduce, the latest run of each.
const ResultsFile = "results.md"

// What results.md's first line says of the sizes its rows ran at, after
// the stamp of the call that wrote it last (Stamp).
const (
	paperSizes = "At the paper's sizes unless the entry says otherwise"
	quickSizes = "At reduced sizes (-quick): a smoke test, not the paper's numbers"
	mixedSizes = "At reduced sizes for the entries marked " + quickMark + " (a smoke test, not the paper's numbers), at the paper's sizes for the others unless the entry says otherwise"
	quickMark  = "(-quick)"
	tableHead  = "| entry | claim | the paper | measured | agreement | time (s) |"
)

// CheckResults reads the results.md of the reproduction folder out, if
// there is one, as Run will before merging its rows into it: an error
// names the file and the line it cannot read.
func CheckResults(out string) error {
	_, err := readResults(filepath.Join(out, ResultsFile))
	return err
}

// readResults reads the rows of a results.md (none when there is no such
// file).
func readResults(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	quick, mixed := false, false
	var rows []Result
	inTable := false
	for i, line := range lines {
		switch {
		case !inTable && strings.Contains(strings.ToLower(line), strings.ToLower(quickSizes)): // "at reduced sizes" before the stamp
			quick = true
		case !inTable && strings.Contains(line, mixedSizes):
			mixed = true
		case line == tableHead:
			inTable = true
		case inTable && strings.HasPrefix(line, "| --- "):
		case inTable && strings.HasPrefix(line, "|"):
			r, err := parseRow(line)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %v (edited by hand?): fix the line, or move the file away", path, i+1, err)
			}
			if mixed {
				r.Entry, r.Quick = strings.CutSuffix(r.Entry, " "+quickMark)
			} else {
				r.Quick = quick
			}
			rows = append(rows, r)
		default:
			inTable = false
		}
	}
	if rows == nil && len(strings.TrimSpace(string(data))) > 0 {
		return nil, fmt.Errorf("%s: no table of results (| entry | claim | ...): not train reproduce's; move it away", path)
	}
	return rows, nil
}

// parseRow reads one row of the table: six cells split at '|' (a cell's
// own '|' written \|), the last the time in seconds.
func parseRow(line string) (Result, error) {
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ { // after the leading '|'
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	if len(cells) != 6 || strings.TrimSpace(cur.String()) != "" {
		return Result{}, fmt.Errorf("%d cells, want 6", len(cells))
	}
	secs, err := strconv.ParseFloat(cells[5], 64)
	if err != nil {
		return Result{}, fmt.Errorf("time %q: want seconds", cells[5])
	}
	return Result{Entry: cells[0], Claim: cells[1], Paper: cells[2], Measured: cells[3], Agrees: cells[4], Seconds: secs}, nil
}

// mergeResults is old with the entries of rows replaced by rows' (or
// added), in the order of the entries; rows of entries this version does
// not know come last, in their order.
func mergeResults(old, rows []Result) []Result {
	byName := map[string]Result{}
	var unknown []string
	for _, r := range append(slices.Clone(old), rows...) {
		if _, seen := byName[r.Entry]; !seen && !slices.ContainsFunc(entries, func(e entry) bool { return e.name == r.Entry }) {
			unknown = append(unknown, r.Entry)
		}
		byName[r.Entry] = r
	}
	var out []Result
	for _, e := range entries {
		if r, ok := byName[e.name]; ok {
			out = append(out, r)
		}
	}
	for _, name := range unknown {
		out = append(out, byName[name])
	}
	return out
}

// writeResults writes the Markdown results table of rows: the stamp of the
// call that ran the entries ran, which sizes the rows ran at (each row's
// own when they differ), which rows earlier calls left, the seconds they
// took in all.
func writeResults(path string, rows []Result, stamp string, ran []string) error {
	quick, full, total := 0, 0, 0.0
	for _, r := range rows {
		if r.Quick {
			quick++
		} else {
			full++
		}
		total += r.Seconds
	}
	sizes := paperSizes
	switch {
	case quick > 0 && full == 0:
		sizes = quickSizes
	case quick > 0:
		sizes = mixedSizes
	}
	var kept []string
	for _, r := range rows {
		if !slices.Contains(ran, r.Entry) {
			kept = append(kept, r.Entry)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Results\n\n%s %s; %.0f s in all.", stamp, sizes, total)
	code := map[string]int{}
	for _, r := range rows {
		for k, n := range r.Code {
			code[k] += n
		}
	}
	b.WriteString(runsMade(code))
	if len(kept) > 0 {
		fmt.Fprintf(&b, " The rows of %s are kept from earlier calls.", strings.Join(kept, ", "))
	}
	b.WriteString("\n\n")
	b.WriteString(tableHead + "\n| --- | --- | --- | --- | --- | --- |\n")
	cell := strings.NewReplacer("|", `\|`, "\n", " ").Replace
	for _, r := range rows {
		name := r.Entry
		if r.Quick && full > 0 {
			name += " " + quickMark
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f |\n", cell(name), cell(r.Claim), cell(r.Paper), cell(r.Measured), cell(r.Agrees), r.Seconds)
	}
	b.WriteString(paperNotes)
	b.WriteString(studiesNote)
	return checkpoints.WriteFileAtomic(path, []byte(b.String()))
}
