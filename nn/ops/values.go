package ops

import (
	"fmt"
	"hash/fnv"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The plumbing every op of this package shares: reading float64 inputs,
// reusing outputs from run to run, and hashing.

// float64Data returns the contiguous float64 data of a vector value of length n.
func float64Data(v G.Value, n int) ([]float64, error) {
	if d, ok := v.(*tensor.Dense); ok && d.RequiresIterator() {
		v = d.Materialize()
	}
	data, ok := v.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("got %T data, want []float64", v.Data())
	}
	if len(data) != n {
		return nil, fmt.Errorf("got %d values, want %d", len(data), n)
	}
	return data, nil
}

// outputVector reuses prealloc when it is a contiguous float64 vector of
// length n and allocates a new one otherwise.
func outputVector(prealloc G.Value, n int) (G.Value, []float64) {
	if d, ok := prealloc.(*tensor.Dense); ok && !d.RequiresIterator() && d.Shape().Dims() == 1 {
		if data, ok := d.Data().([]float64); ok && len(data) == n {
			return d, data
		}
	}
	data := make([]float64, n)
	return tensor.New(tensor.WithShape(n), tensor.WithBacking(data)), data
}

// reuseDo runs do with *buf as its preallocated output and keeps the output
// for the next run (one machine per graph, so nothing else holds it).
func reuseDo(buf **tensor.Dense, do func(G.Value, ...G.Value) (G.Value, error), vals []G.Value) (G.Value, error) {
	var prealloc G.Value // a nil *tensor.Dense must not become a non-nil Value
	if *buf != nil {
		prealloc = *buf
	}
	out, err := do(prealloc, vals...)
	if err == nil {
		*buf = out.(*tensor.Dense)
	}
	return out, err
}

// inferVectorShape checks that every input is a vector of length n.
func inferVectorShape(n int, ds ...G.DimSizer) (tensor.Shape, error) {
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok || s.Dims() != 1 || s.TotalSize() != n {
			return nil, fmt.Errorf("ops: input %d has shape %v: want (%d)", i, d, n)
		}
	}
	return tensor.Shape{n}, nil
}

// hashOp hashes an op by its WriteHash text, as gorgonia's own ops do.
func hashOp(op G.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// recoverGraph turns a panic raised while building a graph into an error,
// at the exported boundary: defer recoverGraph("what", &err) in a function
// with a named error result.
func recoverGraph(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("ops: %s: gorgonia panic: %v", what, r)
	}
}
