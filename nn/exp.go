package nn

import "math"

// exp is e^x to within 2 units in the last place of math.Exp (checked by
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
func exp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return math.Exp(x)
	}
	const shift = 0x1.8p52 // adding it rounds to an integer
	kd := x*(expN/math.Ln2) + shift
	kd -= shift
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
