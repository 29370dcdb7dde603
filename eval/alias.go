package eval

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// aliasTable is a Markov policy compiled for batched sampling: per state,
// Walker's alias table over its row padded to a power of two of slots, so
// a transition costs one 64-bit variate, one slot read and one compare,
// whatever the row's length. The variate's top bits pick the slot
// (exactly uniform: a power of two), its other bits decide between the
// slot's own entry and its alias.
//
// Every CSR entry e also carries where the tables of its next state
// g.Next[e] start and which leaf, if any, that state enters, so a step
// reads two records: the slot, then the record of the entry it chose.
type aliasTable struct {
	slots []aliasSlot
	next  []nextRecord // per CSR entry: the next state's table, and its leaf
	start nextRecord   // the table of s0 -> f
}

// aliasSlot is one slot: entry takes it when the variate's low bits are
// below cut, alias otherwise (cut = 2^64 q, q the slot's share; a slot
// whose share is 1 has alias = entry).
type aliasSlot struct {
	cut          uint64
	entry, alias int32
}

// nextRecord locates a state's slots and says whether it hits a target:
// leaf is i when the state enters leaf t_i (1-based), 0 otherwise.
type nextRecord struct {
	base uint32 // first slot
	bits uint8  // log2 of the number of slots
	leaf uint32
}

// newAliasTable compiles probs (one per CSR entry of g, rows summing to
// 1) into alias tables.
func newAliasTable(g *tasks.Graph, probs []float64) *aliasTable {
	t := &aliasTable{next: make([]nextRecord, len(g.Next))}
	leafOf := make(map[int]uint32, g.W())
	for i, b := range g.Branches {
		leafOf[b.Leaf] = uint32(i + 1)
	}
	records := make([]nextRecord, g.NumStates())
	var q []float64
	var small, large []int
	for s := range g.States {
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		k := uint8(max(1, bits.Len(uint(hi-lo-1)))) // 2^k >= the row's length, and k >= 1 (walk shifts by 64-k)
		n := 1 << k
		records[s] = nextRecord{base: uint32(len(t.slots)), bits: k, leaf: leafOf[g.States[s].Head]}
		q = append(q[:0], make([]float64, n)...)
		for i, p := range probs[lo:hi] {
			q[i] = p * float64(n)
		}
		slots := make([]aliasSlot, n)
		small, large = small[:0], large[:0]
		for i, x := range q {
			if x < 1 {
				small = append(small, i)
			} else {
				large = append(large, i)
			}
		}
		entry := func(i int) int32 {
			if i < hi-lo {
				return int32(lo + i)
			}
			return -1 // padding: share 0, always its alias
		}
		for len(small) > 0 && len(large) > 0 {
			i, j := small[len(small)-1], large[len(large)-1]
			small = small[:len(small)-1]
			slots[i] = aliasSlot{cut: cutOf(q[i]), entry: entry(i), alias: entry(j)}
			if q[j] += q[i] - 1; q[j] < 1 {
				large = large[:len(large)-1]
				small = append(small, j)
			}
		}
		// What is left has share 1 up to rounding; an entry of probability
		// 0 never does, so it becomes the largest entry's alias.
		best := lo
		for e := lo; e < hi; e++ {
			if probs[e] > probs[best] {
				best = e
			}
		}
		for _, i := range append(small, large...) {
			if e := entry(i); e >= 0 && probs[e] > 0 {
				slots[i] = aliasSlot{cut: math.MaxUint64, entry: e, alias: e}
			} else {
				slots[i] = aliasSlot{cut: 0, entry: int32(best), alias: int32(best)}
			}
		}
		for i := range slots {
			if slots[i].entry < 0 {
				slots[i].entry = slots[i].alias
			}
		}
		t.slots = append(t.slots, slots...)
	}
	for e, a := range g.Next {
		t.next[e] = records[a]
	}
	t.start = records[0]
	return t
}

// cutOf is 2^64 x for a share x in [0, 1), rounded down.
func cutOf(x float64) uint64 {
	if x <= 0 {
		return 0
	}
	return uint64(math.Ldexp(x, 64))
}

// walk appends to buf the entries of one rollout from the state whose
// table *rec locates toward target (1-based leaf), until it hits or buf
// holds limit entries, drawing from r; *rec is left at the last state, so
// a walk can go on from where a call stopped. The loop keeps its state in
// registers and has no data-dependent branch but the hit: the slot's
// choice is a borrow.
func (t *aliasTable) walk(buf []int32, rec *nextRecord, target uint32, limit int, r *wyrand) ([]int32, bool) {
	slots, next := t.slots, t.next
	at, w := *rec, uint64(*r)
	n := len(buf)
	buf = buf[:cap(buf)]
	hit := false
	for n < limit {
		if n == len(buf) {
			buf = append(buf, 0) // grows the capacity
			buf = buf[:cap(buf)]
		}
		w += 0xa0761d6478bd642f
		hi, lo := bits.Mul64(w, w^0xe7037ed1a0b428db)
		x := hi ^ lo
		sl := &slots[at.base+uint32(x>>((64-at.bits)&63))]
		_, take := bits.Sub64(x<<(at.bits&63), sl.cut, 0) // 1 when the low bits are below cut
		e := sl.alias ^ ((sl.alias ^ sl.entry) & -int32(take))
		buf[n] = e
		n++
		at = next[e]
		if at.leaf == target {
			hit = true
			break
		}
	}
	*rec, *r = at, wyrand(w)
	return buf[:n], hit
}

// rollout appends to buf one rollout from s0 -> f toward target, at most
// horizon entries (<= 0: no limit), the walk's generator seeded from rng;
// a canceled ctx stops it within checkEvery entries with ctx's error.
func (t *aliasTable) rollout(ctx context.Context, buf []int32, target, horizon int, rng *rand.Rand) ([]int32, bool, error) {
	if horizon <= 0 {
		horizon = math.MaxInt
	}
	end := len(buf) + horizon
	if end < horizon { // overflow
		end = math.MaxInt
	}
	rec, w := t.start, wyrand(rng.Uint64())
	for {
		var hit bool
		buf, hit = t.walk(buf, &rec, uint32(target), min(end, len(buf)+checkEvery), &w)
		if hit || len(buf) >= end {
			return buf, hit, nil
		}
		if err := ctx.Err(); err != nil {
			return buf, false, err
		}
	}
}

// wyrand is a 64-bit generator (Wang Yi's wyrand): one multiply per
// variate, good enough for Monte Carlo, and seeded per rollout.
type wyrand uint64

func (w *wyrand) next() uint64 {
	*w += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(uint64(*w), uint64(*w)^0xe7037ed1a0b428db)
	return hi ^ lo
}
