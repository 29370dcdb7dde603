package checkpoints

import (
	"bytes"
	"testing"
)

// FuzzDecode: the checkpoint loader never panics, and what it accepts
// encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	good, _ := Encode(sample())
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("BTCKPT\x00\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("re-encoded checkpoint refused: %v", err)
		}
		if !bytes.Equal(again[:8], data[:8]) {
			t.Fatal("magic changed")
		}
	})
}
