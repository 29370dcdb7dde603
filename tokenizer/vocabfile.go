package tokenizer

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// fileMagic opens every vocabulary file; the version follows it. Version
// 1 files (no model_rows) are read with the states as the model rows.
const (
	fileMagic   = "backtrack-vocab"
	fileVersion = 2
)

// WriteTo writes the vocabulary: a header line
// "backtrack-vocab 2 branches=<spec> states=<n> targets=<W> model_rows=<m>"
// then one token name per line, in id order; ids [0, m) are the model's
// rows.
func (v *Vocab) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	k, err := fmt.Fprintf(bw, "%s %d branches=%s states=%d targets=%d model_rows=%d\n", fileMagic, fileVersion, v.branches, v.numStates, v.numTarget, v.rows)
	n += int64(k)
	if err != nil {
		return n, err
	}
	for _, name := range v.names {
		k, err := bw.WriteString(name + "\n")
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// Read reads a vocabulary written by WriteTo, checking its header, its
// counts and that its state names are those of the graph it declares.
func Read(r io.Reader) (*Vocab, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("tokenizer: vocabulary file: empty: want a %q header", fileMagic)
	}
	header := sc.Text()
	fields := strings.Fields(header)
	version := 0
	if len(fields) > 1 {
		version, _ = strconv.Atoi(fields[1])
	}
	if len(fields) < 2 || fields[0] != fileMagic || version < 1 || version > fileVersion || len(fields) != 4+version {
		return nil, fmt.Errorf("tokenizer: vocabulary file: header %q: want \"%s %d branches=... states=... targets=... model_rows=...\" (this build reads versions 1 and %d)", sc.Text(), fileMagic, fileVersion, fileVersion)
	}
	kv := map[string]string{}
	for _, f := range fields[2:] {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("tokenizer: vocabulary file: header field %q: want key=value", f)
		}
		kv[k] = val
	}
	branches, err := tasks.ParseBranches(kv["branches"])
	if err != nil {
		return nil, fmt.Errorf("tokenizer: vocabulary file: %w", err)
	}
	var names []string
	for sc.Scan() {
		names = append(names, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokenizer: vocabulary file: %w", err)
	}
	// The counts are checked before the graph is built, so a header cannot
	// make the reader allocate more than the file itself justifies.
	cfg := tasks.Config{Branches: branches}
	states, _ := cfg.Size()
	wantTokens := states + float64(len(branches)+len(Specials))
	if kv["states"] != strconv.FormatFloat(states, 'f', -1, 64) || kv["targets"] != strconv.Itoa(len(branches)) {
		return nil, fmt.Errorf("tokenizer: vocabulary file: header says states=%s targets=%s, graph %q has %.0f and %d", kv["states"], kv["targets"], kv["branches"], states, len(branches))
	}
	canon := fmt.Sprintf("%s 1 branches=%s states=%s targets=%s", fileMagic, tasks.FormatBranches(branches), kv["states"], kv["targets"])
	rows := int(states)
	if version == 2 {
		if kv["model_rows"] != strconv.Itoa(rows) && kv["model_rows"] != strconv.Itoa(rows+len(branches)) {
			return nil, fmt.Errorf("tokenizer: vocabulary file: model_rows=%s: want the states (%d) or the states and targets (%d)", kv["model_rows"], rows, rows+len(branches))
		}
		rows, _ = strconv.Atoi(kv["model_rows"])
		canon = fmt.Sprintf("%s 2 branches=%s states=%s targets=%s model_rows=%d", fileMagic, tasks.FormatBranches(branches), kv["states"], kv["targets"], rows)
	}
	if header != canon {
		return nil, fmt.Errorf("tokenizer: vocabulary file: header %q is not in canonical form %q", header, canon)
	}
	if float64(len(names)) != wantTokens {
		return nil, fmt.Errorf("tokenizer: vocabulary file: %d tokens, want %.0f (truncated or extended?)", len(names), wantTokens)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tokenizer: vocabulary file: %w", err)
	}
	g, err := tasks.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: vocabulary file: %w", err)
	}
	want := New(g)
	v, err := fromNames(names, want.numStates, want.numTarget, want.branches)
	if err != nil {
		return nil, err
	}
	if err := v.Matches(g); err != nil {
		return nil, err
	}
	v.rows = rows
	return v, nil
}
