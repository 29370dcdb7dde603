package kernels

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// LayerNormEps is the eps of LN(h) = (h - mean(h)) / sqrt(var(h) + eps) *
// gain + bias.
const LayerNormEps = 1e-5

// LayerNormStats returns the mean of h and sqrt(var(h) + eps) (biased
// variance), as LayerNorm computes them (to rounding), without changing h.
func LayerNormStats(h []float64) (mean, sigma float64) {
	d := float64(len(h))
	mean = floats.Sum(h) / d
	var v0, v1, v2, v3 float64 // four chains: a single one waits on every add
	i := 0
	for ; i+4 <= len(h); i += 4 {
		c0, c1, c2, c3 := h[i]-mean, h[i+1]-mean, h[i+2]-mean, h[i+3]-mean
		v0, v1, v2, v3 = v0+c0*c0, v1+c1*c1, v2+c2*c2, v3+c3*c3
	}
	for ; i < len(h); i++ {
		c := h[i] - mean
		v0 += c * c
	}
	return mean, math.Sqrt(((v0+v1)+(v2+v3))/d + LayerNormEps)
}

// LayerNorm overwrites h (D) with LN(h) = (h - mean(h)) / sqrt(var(h) +
// eps) * gain + bias, the layer norm of one position: the forward of the
// graph's layer norm and the sampler's.
func LayerNorm(h, gain, bias []float64) {
	d := float64(len(h))
	floats.AddConst(-floats.Sum(h)/d, h) // center
	inv := 1 / math.Sqrt(floats.Dot(h, h)/d+LayerNormEps)
	gain, bias = gain[:len(h)], bias[:len(h)]
	for i, x := range h {
		h[i] = x*inv*gain[i] + bias[i]
	}
}
