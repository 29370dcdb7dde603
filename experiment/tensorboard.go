package experiment

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"time"
)

// TensorBoard event files, written with the standard library only: a file
// of TFRecords, each
//
//	uint64 length (little endian), uint32 masked CRC32C of those 8 bytes,
//	the data, uint32 masked CRC32C of the data,
//
// holding one tensorflow.Event protocol buffer (tensorflow/core/util/
// event.proto): wall_time (field 1, double), step (2, int64), file_version
// (3, string; the first record's, "brain.Event:2"), summary (5, a
// Summary whose repeated value (1) holds tag (1, string) and simple_value
// (2, float)) and session_log (7, a SessionLog: status (1, enum), START =
// 1; the second record's). TensorBoard and W&B's sync read a run folder holding them.

// eventsPrefix starts every event file's name (TensorBoard looks for
// "tfevents" in it).
const eventsPrefix = "events.out.tfevents."

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's masked CRC32C of b.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// events writes one event file.
type events struct {
	f *os.File
	w *bufio.Writer
}

// openEvents creates a new event file in dir named for the time and host,
// as TensorBoard's writers do, and writes its file_version record and a
// SessionLog START at the run's first step. A fresh run (resumeStep < 0)
// first removes the event files an earlier run left; a resumed run adds a
// file beside its earlier ones, and its START at resumeStep tells
// TensorBoard to drop the earlier files' events from that step on (its
// event accumulator purges, on a START after the first, every event seen
// with a step at or above the START's: what a killed run logged after its
// checkpoint, which metrics.csv drops too and the resumed run logs again).
func openEvents(dir string, resumeStep int) (*events, error) {
	if resumeStep < 0 {
		old, _ := filepath.Glob(filepath.Join(dir, eventsPrefix+"*"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return nil, err
			}
		}
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	now := time.Now()
	name := filepath.Join(dir, fmt.Sprintf("%s%d.%s.%d", eventsPrefix, now.Unix(), host, os.Getpid()))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for n := 1; os.IsExist(err); n++ { // a resume within the same second
		f, err = os.OpenFile(fmt.Sprintf("%s.%d", name, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return nil, err
	}
	e := &events{f: f, w: bufio.NewWriter(f)}
	ev := appendFixed64(appendTag(nil, 1, 1), math.Float64bits(wallTime(now)))
	ev = appendBytes(appendTag(ev, 3, 2), []byte("brain.Event:2"))
	// Event.session_log (7): a SessionLog whose status (1) is START (1).
	start := appendFixed64(appendTag(nil, 1, 1), math.Float64bits(wallTime(now)))
	start = binary.AppendUvarint(appendTag(start, 2, 0), uint64(max(resumeStep, 0)))
	start = appendBytes(appendTag(start, 7, 2), binary.AppendUvarint(appendTag(nil, 1, 0), 1))
	for _, rec := range [][]byte{ev, start} {
		if err := e.record(rec); err != nil {
			f.Close()
			return nil, err
		}
	}
	return e, nil
}

// write adds one Event at step with a simple_value per (tag, value) pair,
// skipping NaNs (a column that does not apply), and flushes it.
func (e *events) write(step int, tags []string, values []float64) error {
	var summary []byte
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		val := appendBytes(appendTag(nil, 1, 2), []byte(tags[i]))
		val = appendFixed32(appendTag(val, 2, 5), math.Float32bits(float32(v)))
		summary = appendBytes(appendTag(summary, 1, 2), val)
	}
	ev := appendFixed64(appendTag(nil, 1, 1), math.Float64bits(wallTime(time.Now())))
	ev = binary.AppendUvarint(appendTag(ev, 2, 0), uint64(step))
	ev = appendBytes(appendTag(ev, 5, 2), summary)
	return e.record(ev)
}

// record frames data as one TFRecord and flushes it.
func (e *events) record(data []byte) error {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], maskedCRC(data))
	e.w.Write(head[:])
	e.w.Write(data)
	e.w.Write(tail[:])
	return e.w.Flush()
}

func (e *events) close() error {
	if err := e.w.Flush(); err != nil {
		e.f.Close()
		return err
	}
	return e.f.Close()
}

// wallTime is t in seconds since the epoch.
func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// The protocol buffer wire format: a field's key is its number << 3 | its
// wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field<<3|wire))
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func appendFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func appendFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
