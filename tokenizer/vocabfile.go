package tokenizer

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// fileMagic opens every vocabulary file; the version follows it.
const (
	fileMagic   = "backtrack-vocab"
	fileVersion = 1
)

// WriteTo writes the vocabulary: a header line
// "backtrack-vocab 1 branches=<spec> states=<n> targets=<W>" then one token
// name per line, in id order.
func (v *Vocab) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	k, err := fmt.Fprintf(bw, "%s %d branches=%s states=%d targets=%d\n", fileMagic, fileVersion, v.branches, v.numStates, v.numTarget)
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
	if len(fields) != 5 || fields[0] != fileMagic {
		return nil, fmt.Errorf("tokenizer: vocabulary file: header %q: want \"%s %d branches=... states=... targets=...\"", sc.Text(), fileMagic, fileVersion)
	}
	if fields[1] != strconv.Itoa(fileVersion) {
		return nil, fmt.Errorf("tokenizer: vocabulary file: version %q: this build reads version %d", fields[1], fileVersion)
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
	if canon := fmt.Sprintf("%s %d branches=%s states=%s targets=%s", fileMagic, fileVersion, tasks.FormatBranches(branches), kv["states"], kv["targets"]); header != canon {
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
	return v, nil
}
