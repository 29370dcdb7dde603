package checkpoints

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample() *Checkpoint {
	return &Checkpoint{
		Kind: "bigram", Config: json.RawMessage(`{"graph":{"W":2}}`), Step: 42, RNG: []byte{1, 2, 3},
		State: json.RawMessage(`{"tokens":3}`), WallSeconds: 1.5,
		Tensors: []Tensor{{"logits", nil, []float64{0, -1.5, 3e300, 5e-324}}, {"optimizer", nil, []float64{}}, {"m", []int{1, 1}, []float64{7}}},
	}
}

func TestRoundTripByteIdentical(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "checkpoint.bin")
	if err := Save(p, sample()); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Step != 42 || c.Kind != "bigram" || string(c.RNG) != "\x01\x02\x03" || string(c.Config) != `{"graph":{"W":2}}` ||
		string(c.State) != `{"tokens":3}` || c.WallSeconds != 1.5 || fmt.Sprint(c.Tensors[2].Shape) != "[1 1]" {
		t.Errorf("got %+v", c)
	}
	l, err := c.Tensor("logits", 4)
	if err != nil || l[2] != 3e300 || l[3] != 5e-324 {
		t.Errorf("logits: got %v, %v", l, err)
	}
	p2 := filepath.Join(dir, "again.bin")
	Save(p2, c)
	a, _ := os.ReadFile(p)
	b, _ := os.ReadFile(p2)
	if !bytes.Equal(a, b) {
		t.Error("save, load, save is not byte-identical")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestRefusesCorruption flips every byte and truncates at every length: each
// damaged file is refused, with a one-line message.
func TestRefusesCorruption(t *testing.T) {
	good, _ := Encode(sample())
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x10
		if _, err := Decode(bad); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
	for n := 0; n < len(good); n++ {
		_, err := Decode(good[:n])
		if err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	}
}

func TestRefusesOtherVersionAndShapes(t *testing.T) {
	good, _ := Encode(sample())
	for v, want := range map[byte]string{1: "version 1 was written by an older build", 3: "version 3"} {
		other := append([]byte(nil), good...)
		other[8] = v
		if _, err := Decode(other); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version %d: got %v", v, err)
		}
	}
	if _, err := Encode(&Checkpoint{Tensors: []Tensor{{"x", []int{2, 2}, []float64{1}}}}); err == nil {
		t.Error("a shape that does not match its data: got no error")
	}
	c, _ := Decode(good)
	if _, err := c.Tensor("logits", 5); err == nil || !strings.Contains(err.Error(), "another model or graph") {
		t.Errorf("wrong length: got %v", err)
	}
	if _, err := c.Tensor("attention", -1); err == nil {
		t.Error("missing tensor: got no error")
	}
	if _, err := Decode([]byte("hello world, not a checkpoint at all")); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Errorf("foreign file: got %v", err)
	}
}
