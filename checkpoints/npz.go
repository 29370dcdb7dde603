package checkpoints

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Array is one named array of an .npz file: exactly one of Float, Int or
// Text holds its values (row-major), Shape multiplies out to their number
// (nil or empty: a scalar, one value). Text arrays are numpy's fixed-width
// unicode ('<U'), which numpy loads without allow_pickle.
type Array struct {
	Name  string
	Shape []int
	Float []float64
	Int   []int64
	Text  []string
}

// WriteNPZ writes arrays as an .npz file: a zip of one NPY (format 1.0)
// file per array, named NAME.npy, as numpy.savez writes them and
// numpy.load reads them.
func WriteNPZ(w io.Writer, arrays []Array) error {
	z := zip.NewWriter(w)
	seen := map[string]bool{}
	for _, a := range arrays {
		if a.Name == "" || strings.ContainsAny(a.Name, "/\\") || seen[a.Name] {
			return fmt.Errorf("checkpoints: npz: array name %q: want a unique name without slashes", a.Name)
		}
		seen[a.Name] = true
		data, err := encodeNPY(a)
		if err != nil {
			return err
		}
		f, err := z.CreateHeader(&zip.FileHeader{Name: a.Name + ".npy", Method: zip.Deflate})
		if err != nil {
			return fmt.Errorf("checkpoints: npz: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("checkpoints: npz: %w", err)
		}
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("checkpoints: npz: %w", err)
	}
	return nil
}

// encodeNPY is one array in the NPY format 1.0: magic, version, header
// length, a Python dict literal padded with spaces to a multiple of 64
// bytes (ending in a newline), then the little-endian values.
func encodeNPY(a Array) ([]byte, error) {
	n := 1
	for _, d := range a.Shape {
		if d < 0 {
			return nil, fmt.Errorf("checkpoints: npz: array %q: shape %v", a.Name, a.Shape)
		}
		n *= d
	}
	var descr string
	var body bytes.Buffer
	switch {
	case a.Float != nil && a.Int == nil && a.Text == nil && len(a.Float) == n:
		descr = "<f8"
		for _, v := range a.Float {
			binary.Write(&body, binary.LittleEndian, math.Float64bits(v))
		}
	case a.Int != nil && a.Float == nil && a.Text == nil && len(a.Int) == n:
		descr = "<i8"
		for _, v := range a.Int {
			binary.Write(&body, binary.LittleEndian, v)
		}
	case a.Text != nil && a.Float == nil && a.Int == nil && len(a.Text) == n:
		width := 1
		for _, s := range a.Text {
			width = max(width, utf8.RuneCountInString(s))
		}
		descr = fmt.Sprintf("<U%d", width)
		for _, s := range a.Text {
			k := 0
			for _, r := range s {
				binary.Write(&body, binary.LittleEndian, uint32(r))
				k++
			}
			body.Write(make([]byte, 4*(width-k)))
		}
	default:
		return nil, fmt.Errorf("checkpoints: npz: array %q: want exactly one of float, int or text values, %d of them for shape %v", a.Name, n, a.Shape)
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = fmt.Sprint(d)
	}
	shape := "(" + strings.Join(dims, ", ") + ")"
	if len(dims) == 1 {
		shape = "(" + dims[0] + ",)"
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	const prefix = 6 + 2 + 2 // magic, version, header length
	pad := 64 - (prefix+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	if len(header) > math.MaxUint16 {
		return nil, fmt.Errorf("checkpoints: npz: array %q: header too long", a.Name)
	}
	var out bytes.Buffer
	out.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&out, binary.LittleEndian, uint16(len(header)))
	out.WriteString(header)
	out.Write(body.Bytes())
	return out.Bytes(), nil
}
