package nn

import "testing"

// TestKernelsWithoutAVX runs the kernel checks, and the sampler against
// the graph, on gonum's path, which machines without AVX2 and FMA take.
func TestKernelsWithoutAVX(t *testing.T) {
	defer func(had bool) { haveAVX = had }(haveAVX)
	haveAVX = false
	checkVectorKernels(t)
	checkStridedKernels(t)
	checkExps(t)
	t.Run("sampler", TestTransformerSamplerMatchesGraph)
}
