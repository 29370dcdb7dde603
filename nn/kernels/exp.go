package kernels

import "math"

// Exp is e^x to within 2 units in the last place of math.Exp (checked by
// TestExp) at about half its cost: the softmaxes of the sampler, the
// attention and the table pass take one exponential per weight, and
// math.Exp was the largest single cost of a paper-size step.
//
// With k = round(x N / ln 2), N = 2^expBits, and r = x - k ln2 / N (|r| <=
// ln2 / 2N, computed in two parts so that k ln2 / N is exact),
//
//	e^x = 2^(k div N) 2^((k mod N) / N) e^r,
//
// the middle factor read from a table and e^r - 1 = r + r^2/2 + ... +
// r^5/120 (the next term, r^6/720 < 6e-19, is below the last place).
// Arguments outside (-708, 709), where the result would leave the normal
// range, and NaN go to math.Exp.
func Exp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return math.Exp(x)
	}
	kd := x*(expN/math.Ln2) + expShift
	kd -= expShift
	k := int64(kd)
	r := x - kd*(ln2hi/expN) - kd*(ln2lo/expN)
	p := r + r*r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120))))
	t := expTable[k&(expN-1)]
	return (t + t*p) * math.Float64frombits(uint64(k>>expBits+1023)<<52)
}

// expBits sets the table of exp: 2^expBits entries.
const (
	expBits = 7
	expN    = 1 << expBits
)

// expTable holds 2^(i / expN), i < expN.
var expTable = func() (t [expN]float64) {
	for i := range t {
		t[i] = math.Exp2(float64(i) / expN)
	}
	return t
}()

// ln2hi + ln2lo is ln 2, ln2hi with its last 32 bits zero (so that k
// ln2hi / 2^expBits is exact for |k| < 2^20).
const (
	ln2hi = 6.93147180369123816490e-01
	ln2lo = 1.90821492927058770002e-10
)

// expShift is 1.5 2^52: adding it to a float64 of magnitude below 2^51
// rounds it to an integer, held in the low bits of the sum.
const expShift = 0x1.8p52

// Exps writes dst[i] = Exp(src[i] - m) for every i, len(dst) ==
// len(src) (dst may be src), four at a time with AVX2 when every argument
// is in exp's range (to within 2 units in the last place of math.Exp,
// TestExps), and the last len % 4 with the scalar Exp's bits, in one
// vector call (TestExpsTail); the softmaxes take their exponentials
// through it.
func Exps(dst, src []float64, m float64) {
	if len(dst) != len(src) {
		panic("kernels: exps: lengths differ")
	}
	n4 := 0
	if haveAVX {
		// expsAVX checks the range of all (nothing is written when one is
		// out: dst may be src).
		if n4 = len(src) &^ 3; n4 > 0 && !expsAVX(dst[:n4], src[:n4], m, &expConsts, &expTable[0], true) {
			n4 = 0
		}
	}
	if tail := len(src) - n4; haveAVX && tail > 0 && tail < 4 { // Exp's bits, the last len % 4 in one call
		var pad [4]float64
		ok := true
		for j := range tail {
			x := src[n4+j] - m
			ok = ok && x > -708 && x < 709
			pad[j] = x
		}
		if ok {
			expsScalarAVX(&pad, &expConsts, &expTable[0])
			copy(dst[n4:], pad[:tail])
			return
		}
	}
	for i := n4; i < len(src); i++ {
		dst[i] = Exp(src[i] - m)
	}
}

// expConsts are expsAVX's constants: N / ln 2, expShift, -ln2hi / N,
// -ln2lo / N, the polynomial's 1/120, 1/24, 1/6 and 1/2, then as integers
// N-1 (the table index mask) and 1023 N - bits(expShift) (added to the
// bits of k + expShift and shifted right by expBits, it gives the biased
// exponent of 2^(k div N) for k > -1023 N), and exp's range (-708, 709)
// for the check.
var expConsts = [12]float64{expN / math.Ln2, expShift, -ln2hi / expN, -ln2lo / expN, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2,
	math.Float64frombits(expN - 1), math.Float64frombits(1023*expN - math.Float64bits(expShift)), -708, 709}

// Logs writes dst[i] = math.Log(src[i]) for every i, len(dst) == len(src)
// (dst may be src), four at a time with AVX2 where the four are normal
// positive finite numbers, bit for bit (TestLogs): math.Log's amd64
// assembly's operations lane by lane. The table pass takes a log of every
// token's sum, one after another they were a twentieth of its update.
func Logs(dst, src []float64) {
	if len(dst) != len(src) {
		panic("kernels: logs: lengths differ")
	}
	n4 := 0
	if haveAVX { // amd64, where math.Log is archLog
		if n4 = len(src) &^ 3; n4 > 0 && !logsAVX(dst[:n4], src[:n4], &logConsts) {
			n4 = 0
		}
	}
	for i := n4; i < len(src); i++ {
		dst[i] = math.Log(src[i])
	}
}

// logConsts are logsAVX's constants, each four times: the smallest normal
// and the largest finite number (its range), the mantissa mask, 0.5, 2^52
// + 0x3FE, archLog's HSqrt2, 1, 2, 2^52, L7, L5, L3, L1, L6, L4, L2, Ln2Lo
// and Ln2Hi (the literals of math/log_amd64.s).
var logConsts = func() (c [72]float64) {
	for i, v := range []float64{0x1p-1022, math.MaxFloat64, math.Float64frombits(1<<52 - 1), 0.5, 0x1p52 + 0x3FE,
		7.07106781186547524401e-01, 1, 2, 0x1p52,
		1.479819860511658591e-01, 1.818357216161805012e-01, 2.857142874366239149e-01, 6.666666666666735130e-01,
		1.531383769920937332e-01, 2.222219843214978396e-01, 3.999999999940941908e-01,
		1.90821492927058770002e-10, 6.93147180369123816490e-01} {
		for j := range 4 {
			c[4*i+j] = v
		}
	}
	return c
}()
