// Package checkpoints stores training state in versioned, self-describing,
// checksummed files written atomically: a run resumes from its last
// checkpoint to the same result it would have reached uninterrupted, and a
// truncated, corrupted, foreign or mismatched file is refused with a
// message saying which.
//
// Layout (little-endian):
//
//	magic "BTCKPT\x00\x01" | uint32 version | uint32 header length |
//	header (JSON) | float64 data of every tensor, in header order |
//	SHA-256 of everything before it
//
// The header holds the kind (the parameter layout, named by the trainer:
// "bigram", "dense-bigram", "transformer"), the run's configuration, the
// step, the random source, the trainer's counters (JSON the trainer decodes
// strictly), the wall time and each tensor's name, shape and length.
// Version 1 files (before the trainer owned its counters) are refused with
// a message naming their version.
package checkpoints

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Version is the format version this build writes and reads.
const Version = 2

var magic = []byte("BTCKPT\x00\x01")

// maxHeader bounds the JSON header so a corrupted length cannot make the
// reader allocate gigabytes.
const maxHeader = 64 << 20

// Tensor is one named array of parameters or optimiser state; Shape, when
// given, multiplies out to len(Data) (row-major).
type Tensor struct {
	Name  string
	Shape []int
	Data  []float64
}

// Checkpoint is everything needed to resume a run.
type Checkpoint struct {
	// Kind names the parameter layout, e.g. "bigram" or "transformer".
	Kind string `json:"kind"`
	// Config is the run's resolved configuration (JSON), authoritative on
	// resume.
	Config json.RawMessage `json:"config"`
	// Step is the number of optimiser steps taken.
	Step int `json:"step"`
	// RNG is the serialised state of the run's random source.
	RNG []byte `json:"rng"`
	// State holds the trainer's counters (its own JSON).
	State json.RawMessage `json:"state,omitempty"`
	// WallSeconds is the time spent on the run so far.
	WallSeconds float64 `json:"wall_seconds"`
	// Code names the code (a commit; "" when unknown) of each process
	// that trained the run so far, each change once, in order.
	Code []string `json:"code,omitempty"`
	// Tensors hold parameters and optimiser state.
	Tensors []Tensor `json:"-"`
}

type header struct {
	Checkpoint
	Sizes []tensorSize `json:"tensors"`
}

type tensorSize struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape,omitempty"`
	Len   int    `json:"len"`
}

// Tensor returns the named tensor, checking its length (want < 0: any).
func (c *Checkpoint) Tensor(name string, want int) ([]float64, error) {
	for _, t := range c.Tensors {
		if t.Name == name {
			if want >= 0 && len(t.Data) != want {
				return nil, fmt.Errorf("checkpoints: tensor %q has %d values, this model needs %d: the checkpoint is of another model or graph", name, len(t.Data), want)
			}
			return t.Data, nil
		}
	}
	return nil, fmt.Errorf("checkpoints: no tensor %q in a %s checkpoint", name, c.Kind)
}

// Write serialises c to w.
func Write(w io.Writer, c *Checkpoint) error {
	data, err := Encode(c)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// Read reads and verifies a serialised checkpoint from r.
func Read(r io.Reader) (*Checkpoint, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	return Decode(data)
}

// Encode serialises c.
func Encode(c *Checkpoint) ([]byte, error) {
	h := header{Checkpoint: *c}
	for _, t := range c.Tensors {
		if t.Shape != nil && shapeSize(t.Shape) != len(t.Data) {
			return nil, fmt.Errorf("checkpoints: tensor %q: shape %v for %d values", t.Name, t.Shape, len(t.Data))
		}
		h.Sizes = append(h.Sizes, tensorSize{t.Name, t.Shape, len(t.Data)})
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: header: %w", err)
	}
	var buf bytes.Buffer
	buf.Write(magic)
	binary.Write(&buf, binary.LittleEndian, uint32(Version))
	binary.Write(&buf, binary.LittleEndian, uint32(len(hj)))
	buf.Write(hj)
	var b [8]byte
	for _, t := range c.Tensors {
		for _, v := range t.Data {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			buf.Write(b[:])
		}
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes(), nil
}

// Decode parses and verifies a serialised checkpoint.
func Decode(data []byte) (*Checkpoint, error) {
	const fixed = 8 + 4 + 4
	if len(data) < len(magic) || !bytes.Equal(data[:len(magic)], magic) {
		return nil, errors.New("checkpoints: not a checkpoint file (bad magic)")
	}
	if len(data) < fixed+sha256.Size {
		return nil, errors.New("checkpoints: truncated file")
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v == 1 {
		return nil, fmt.Errorf("checkpoints: format version 1 was written by an older build (before the trainers owned their counters); this build reads version %d: rerun the training, or resume it with the build that wrote it", Version)
	} else if v != Version {
		return nil, fmt.Errorf("checkpoints: format version %d: this build reads version %d", v, Version)
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checkpoints: checksum mismatch: the file is corrupted or truncated")
	}
	hl := int(binary.LittleEndian.Uint32(data[12:]))
	if hl > maxHeader || fixed+hl > len(body) {
		return nil, errors.New("checkpoints: header length out of range")
	}
	var h header
	if err := json.Unmarshal(body[fixed:fixed+hl], &h); err != nil {
		return nil, fmt.Errorf("checkpoints: header: %w", err)
	}
	rest := body[fixed+hl:]
	total := 0
	for _, s := range h.Sizes {
		if s.Len < 0 || s.Len > len(rest)/8 {
			return nil, fmt.Errorf("checkpoints: tensor %q: length %d out of range", s.Name, s.Len)
		}
		if s.Shape != nil && shapeSize(s.Shape) != s.Len {
			return nil, fmt.Errorf("checkpoints: tensor %q: shape %v for %d values", s.Name, s.Shape, s.Len)
		}
		total += s.Len
	}
	if total*8 != len(rest) {
		return nil, fmt.Errorf("checkpoints: %d bytes of tensor data for %d values", len(rest), total)
	}
	c := h.Checkpoint
	for _, s := range h.Sizes {
		d := make([]float64, s.Len)
		for i := range d {
			d[i] = math.Float64frombits(binary.LittleEndian.Uint64(rest[8*i:]))
		}
		rest = rest[8*s.Len:]
		c.Tensors = append(c.Tensors, Tensor{Name: s.Name, Shape: s.Shape, Data: d})
	}
	return &c, nil
}

// shapeSize multiplies a shape out (-1 for a negative dimension).
func shapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt32/d) {
			return -1
		}
		n *= d
	}
	return n
}

// Save writes c to path atomically: a temporary file in the same folder,
// fsync, rename over path, fsync of the folder. A crash at any moment
// leaves either the previous file or the new one, never a partial one.
func Save(path string, c *Checkpoint) error {
	data, err := Encode(c)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data)
}

// Load reads and verifies the checkpoint at path.
func Load(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return c, nil
}

// WriteFileAtomic writes data to path through a synced temporary file and
// a rename.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// WriteAtomic writes path through a synced temporary file in its folder
// and a rename, streaming what write writes; the temporary file never
// outlives the call.
func WriteAtomic(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("checkpoints: %w", err)
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return fmt.Errorf("checkpoints: write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoints: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoints: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
