//go:build !amd64

package kernels

// cpuAVX is false off amd64: the vector kernels are gonum's.
const cpuAVX = false

// haveAVX is whether the vector kernels use the assembly: never here.
var haveAVX = false

// The AVX kernels are declared for the build only: with haveAVX false,
// kernels.go never calls them.

func dotAVX(x, y []float64) float64 { panic("kernels: no AVX kernels off amd64") }

func axpyAVX(dst []float64, a float64, x []float64) { panic("kernels: no AVX kernels off amd64") }

func addTwoAVX(dst, x, y []float64) { panic("kernels: no AVX kernels off amd64") }

func dotsAVX(y, x, a []float64, stride int) { panic("kernels: no AVX kernels off amd64") }

func axpysAVX(dst, c, a []float64, stride int) { panic("kernels: no AVX kernels off amd64") }

func axpys2AVX(dst0, dst1, c0, c1, a []float64, stride int) {
	panic("kernels: no AVX kernels off amd64")
}

func expsAVX(dst, src []float64, m float64, c *[12]float64, table *float64, check bool) bool {
	panic("kernels: no AVX kernels off amd64")
}

func expsScalarAVX(x *[4]float64, c *[12]float64, table *float64) {
	panic("kernels: no AVX kernels off amd64")
}

func logsAVX(dst, src []float64, c *[72]float64) bool { panic("kernels: no AVX kernels off amd64") }

func gerAVX(a, x, y []float64, stride int) { panic("kernels: no AVX kernels off amd64") }

func fmaPeak(n int) float64 { panic("kernels: no AVX kernels off amd64") }
