package kernels

import "testing"

// TestKernelsWithoutAVX runs the kernel checks on gonum's path, which
// machines without AVX2 and FMA take (the ops and models packages rerun
// their own checks on it too).
func TestKernelsWithoutAVX(t *testing.T) {
	defer UseAVX(UseAVX(false))
	if haveAVX {
		t.Fatal("UseAVX(false) left the assembly on")
	}
	checkVectorKernels(t)
	checkStridedKernels(t)
	checkMatrixKernels(t)
	checkExps(t)
	checkLogs(t)
	checkSoftmaxRowsRepeat(t)
}
