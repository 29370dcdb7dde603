package experiment

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// The decoder below is the test's own: TFRecord framing and the protocol
// buffer wire format read field by field, independent of the writer's
// encoding helpers.

// tfEvent is what the test reads of a tensorflow.Event.
type tfEvent struct {
	wallTime float64
	step     int64
	version  string
	start    bool // a SessionLog START
	values   map[string]float32
}

// readRecords splits a TFRecord file, checking both masked CRC32Cs of
// every record.
func readRecords(t *testing.T, data []byte) [][]byte {
	t.Helper()
	tab := crc32.MakeTable(crc32.Castagnoli)
	mask := func(b []byte) uint32 {
		c := crc32.Checksum(b, tab)
		return ((c >> 15) | (c << 17)) + 0xa282ead8
	}
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 16 {
			t.Fatalf("a record of %d bytes", len(data))
		}
		n := binary.LittleEndian.Uint64(data[:8])
		if got := binary.LittleEndian.Uint32(data[8:12]); got != mask(data[:8]) {
			t.Fatalf("length CRC %#x, want %#x", got, mask(data[:8]))
		}
		body := data[12 : 12+n]
		if got := binary.LittleEndian.Uint32(data[12+n : 16+n]); got != mask(body) {
			t.Fatalf("data CRC %#x, want %#x", got, mask(body))
		}
		out = append(out, body)
		data = data[16+n:]
	}
	return out
}

// fields walks one message's fields: number, wire type, and the varint,
// fixed or length-delimited value.
func fields(t *testing.T, b []byte, f func(num, wire int, v uint64, bytes []byte)) {
	t.Helper()
	uvarint := func() uint64 {
		var x uint64
		for shift := 0; ; shift += 7 {
			if len(b) == 0 || shift > 63 {
				t.Fatal("truncated varint")
			}
			c := b[0]
			b = b[1:]
			x |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return x
			}
		}
	}
	for len(b) > 0 {
		key := uvarint()
		num, wire := int(key>>3), int(key&7)
		switch wire {
		case 0:
			f(num, wire, uvarint(), nil)
		case 1:
			f(num, wire, binary.LittleEndian.Uint64(b[:8]), nil)
			b = b[8:]
		case 5:
			f(num, wire, uint64(binary.LittleEndian.Uint32(b[:4])), nil)
			b = b[4:]
		case 2:
			n := uvarint()
			f(num, wire, 0, b[:n])
			b = b[n:]
		default:
			t.Fatalf("field %d: wire type %d", num, wire)
		}
	}
}

func decodeEvent(t *testing.T, b []byte) tfEvent {
	ev := tfEvent{values: map[string]float32{}}
	fields(t, b, func(num, wire int, v uint64, bs []byte) {
		switch {
		case num == 1 && wire == 1:
			ev.wallTime = math.Float64frombits(v)
		case num == 2 && wire == 0:
			ev.step = int64(v)
		case num == 3 && wire == 2:
			ev.version = string(bs)
		case num == 7 && wire == 2: // SessionLog
			fields(t, bs, func(num, wire int, v uint64, _ []byte) {
				if num != 1 || wire != 0 {
					t.Fatalf("session log field %d wire %d", num, wire)
				}
				ev.start = v == 1
			})
		case num == 5 && wire == 2: // Summary
			fields(t, bs, func(num, wire int, _ uint64, val []byte) {
				if num != 1 || wire != 2 {
					t.Fatalf("summary field %d wire %d", num, wire)
				}
				var tag string
				var x float32
				fields(t, val, func(num, wire int, v uint64, s []byte) {
					switch {
					case num == 1 && wire == 2:
						tag = string(s)
					case num == 2 && wire == 5:
						x = math.Float32frombits(uint32(v))
					default:
						t.Fatalf("value field %d wire %d", num, wire)
					}
				})
				ev.values[tag] = x
			})
		default:
			t.Fatalf("event field %d wire %d", num, wire)
		}
	})
	return ev
}

// TestCRC32CCheckValue: the Castagnoli CRC of "123456789" is its standard
// check value 0xe3069283.
func TestCRC32CCheckValue(t *testing.T) {
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Errorf("got %#x, want 0xe3069283", got)
	}
}

// TestTensorBoardEvents: a run with TensorBoard writes one event file whose
// first event holds file_version brain.Event:2, then one event per metrics
// row at its step with a scalar for every non-empty cell but step, equal to
// the CSV's value as a float32; a resumed run adds a second file and a
// fresh run over the folder removes both.
func TestTensorBoardEvents(t *testing.T) {
	cfg := Defaults(trainers.BigramModel, trainers.GRPO)
	cfg.Graph = tasks.Config{W: 3, K: 2, L: 2}
	cfg.Train.Steps, cfg.Train.Until, cfg.Train.Rollouts = 20, 0, 32
	cfg.TensorBoard, cfg.Out = true, t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.Out, eventsPrefix+"*"))
	if len(files) != 1 {
		t.Fatalf("event files %v, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, data)
	m, err := ReadMetrics(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(m.Rows)+2 {
		t.Fatalf("%d events, want %d (the version, the start and one per row)", len(recs), len(m.Rows)+2)
	}
	if ev := decodeEvent(t, recs[0]); ev.version != "brain.Event:2" || ev.wallTime < 1.7e9 {
		t.Errorf("first event: version %q, wall time %v", ev.version, ev.wallTime)
	}
	if ev := decodeEvent(t, recs[1]); !ev.start || ev.step != 0 {
		t.Errorf("second event: start %v at step %d, want a START at step 0", ev.start, ev.step)
	}
	checkScalars(t, cfg.Out)
	if len(m.Rows) != 3 || fmt.Sprint(m.Column("step")) != "[0 10 20]" {
		t.Errorf("steps %v, want 0, 10, 20", m.Column("step"))
	}
	// A resume logs its first step again in a second file, after a START
	// that makes TensorBoard drop the first file's events from that step on.
	if _, err := Resume(context.Background(), cfg.Out, Changes{Steps: 30}, Options{}); err != nil {
		t.Fatal(err)
	}
	if files, _ = filepath.Glob(filepath.Join(cfg.Out, eventsPrefix+"*")); len(files) != 2 {
		t.Errorf("after a resume: event files %v, want two", files)
	}
	if steps := checkScalars(t, cfg.Out); fmt.Sprint(steps) != "[0 10 20 30]" {
		t.Errorf("after a resume TensorBoard shows steps %v, want 0, 10, 20, 30", steps)
	}
	cfg.Train.Steps = 10
	if _, err := Run(context.Background(), cfg, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if files, _ = filepath.Glob(filepath.Join(cfg.Out, eventsPrefix+"*")); len(files) != 1 {
		t.Errorf("after a fresh run: event files %v, want one", files)
	}
}

// checkScalars reads a run folder's event files as TensorBoard does, in
// name order, and purges as its event accumulator does on a START after
// the first (every event seen with a step at or above the START's), then
// checks that what is left is metrics.csv: one event per row, in order,
// with every value. It returns the steps shown.
func checkScalars(t *testing.T, dir string) []int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, eventsPrefix+"*"))
	sort.Strings(files)
	var shown []tfEvent
	starts := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range readRecords(t, data) {
			ev := decodeEvent(t, rec)
			switch {
			case ev.start:
				if starts++; starts > 1 {
					shown = slices.DeleteFunc(shown, func(e tfEvent) bool { return e.step >= ev.step })
				}
			case ev.version == "":
				shown = append(shown, ev)
			}
		}
	}
	m, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(shown) != len(m.Rows) {
		t.Fatalf("TensorBoard shows %d events, metrics.csv has %d rows", len(shown), len(m.Rows))
	}
	var steps []int64
	for i, row := range m.Rows {
		ev := shown[i]
		steps = append(steps, ev.step)
		if ev.step != int64(row[0]) {
			t.Errorf("event %d: step %d, want %v", i, ev.step, row[0])
		}
		want := 0
		for c, name := range m.Header[1:] {
			v := row[c+1]
			if math.IsNaN(v) {
				continue
			}
			want++
			// The CSV rounds 'f' columns to three decimals.
			if got, ok := ev.values[name]; !ok || math.Abs(float64(got)-v) > 5e-4+1e-6*math.Abs(v) {
				t.Errorf("step %d, %s: got %v (present %v), want %v", ev.step, name, got, ok, float32(v))
			}
		}
		if len(ev.values) != want {
			t.Errorf("step %d: %d scalars, want %d", ev.step, len(ev.values), want)
		}
	}
	return steps
}
