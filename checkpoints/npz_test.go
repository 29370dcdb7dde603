package checkpoints

import (
	"bytes"
	"strings"
	"testing"
)

// An int64 vector is numpy.save's exact bytes: magic, version 1.0, a
// header dict padded with spaces to a 64-byte boundary ending in a
// newline, then the little-endian values.
func TestEncodeNPY(t *testing.T) {
	got, err := encodeNPY(Array{Name: "x", Shape: []int{2}, Int: []int64{1, -2}})
	if err != nil {
		t.Fatal(err)
	}
	header := "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n" // 58 characters: two 64-byte blocks
	want := "\x93NUMPY\x01\x00" + string([]byte{byte(len(header)), 0}) + header +
		"\x01\x00\x00\x00\x00\x00\x00\x00" + "\xfe\xff\xff\xff\xff\xff\xff\xff"
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	text, err := encodeNPY(Array{Name: "v", Shape: []int{2}, Text: []string{"ab", "é"}})
	if err != nil {
		t.Fatal(err)
	}
	if body := text[len(text)-16:]; !bytes.Equal(body, []byte("a\x00\x00\x00b\x00\x00\x00\xe9\x00\x00\x00\x00\x00\x00\x00")) || !bytes.Contains(text, []byte("'<U2'")) {
		t.Errorf("text array: got %q", text)
	}
}

func TestWriteNPZRefuses(t *testing.T) {
	for _, tc := range []struct {
		arrays []Array
		want   string
	}{
		{[]Array{{Name: "a", Float: []float64{1}}, {Name: "a", Float: []float64{2}}}, `array name "a"`},
		{[]Array{{Name: "a", Shape: []int{3}, Float: []float64{1, 2}}}, "3 of them for shape [3]"},
		{[]Array{{Name: "a", Float: []float64{1}, Int: []int64{1}}}, "exactly one of"},
	} {
		err := WriteNPZ(new(bytes.Buffer), tc.arrays)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error with %q", err, tc.want)
		}
	}
}
