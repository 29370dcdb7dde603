package eval

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

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

// nextRecord locates a state's slots and says whether it hits a target,
// packed in one word so a walk keeps each rollout's place in one register:
// bits 0-31 the first slot, 32-39 log2 of the number of slots, 40-63 the
// leaf the state enters (i for leaf t_i, 1-based; 0 for none).
type nextRecord uint64

func makeRecord(base uint32, bits uint8, leaf uint32) nextRecord {
	return nextRecord(uint64(base) | uint64(bits)<<32 | uint64(leaf)<<40)
}

func (r nextRecord) base() uint32 { return uint32(r) }
func (r nextRecord) bits() uint64 { return uint64(r>>32) & 0xff }
func (r nextRecord) leaf() uint32 { return uint32(r >> 40) }

// maxLeaves is the most branches a record can name.
const maxLeaves = 1<<24 - 1

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
		records[s] = makeRecord(uint32(len(t.slots)), k, leafOf[g.States[s].Head])
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
		k := at.bits()
		sl := &slots[at.base()+uint32(x>>((64-k)&63))]
		_, take := bits.Sub64(x<<(k&63), sl.cut, 0) // 1 when the low bits are below cut
		e := sl.alias ^ ((sl.alias ^ sl.entry) & -int32(take))
		buf[n] = e
		n++
		at = next[e]
		if at.leaf() == target {
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

// lanes is how many rollouts one worker walks at once. A transition is
// two dependent reads (the slot, then the next record of the entry it
// chose), from L2 cache at the paper's size (BenchmarkWalkLanes), so a
// single rollout spends most of its time waiting on them; four
// independent rollouts fill each other's waits.
const lanes = 4

// lane is one rollout in progress in a worker's interleaved walk: its
// entries go to the end of out.entries, up to end (its horizon).
type lane struct {
	out    *agentWorker
	i      int // the rollout; -1 when the lane is idle
	at     nextRecord
	r      wyrand
	target uint32
	end    int
}

// walkLanes advances the four lanes together by up to steps transitions
// each (every lane's entries must have room for them beyond its length),
// stopping after the transition in which some lane hits its target, and
// returns how many transitions each lane took. Each lane draws exactly
// what walk would draw for it alone: the lanes only share the loop.
func (t *aliasTable) walkLanes(ls *[lanes]lane, steps int) int {
	slots, next := t.slots, t.next
	a0, a1, a2, a3 := ls[0].at, ls[1].at, ls[2].at, ls[3].at
	w0, w1, w2, w3 := uint64(ls[0].r), uint64(ls[1].r), uint64(ls[2].r), uint64(ls[3].r)
	t0, t1, t2, t3 := ls[0].target, ls[1].target, ls[2].target, ls[3].target
	grow := func(l *lane) []int32 { n := len(l.out.entries); return l.out.entries[n : n+steps] }
	b0, b1, b2, b3 := grow(&ls[0]), grow(&ls[1]), grow(&ls[2]), grow(&ls[3])
	b1, b2, b3 = b1[:len(b0)], b2[:len(b0)], b3[:len(b0)]
	n := 0
	for n < len(b0) {
		w0 += 0xa0761d6478bd642f
		w1 += 0xa0761d6478bd642f
		w2 += 0xa0761d6478bd642f
		w3 += 0xa0761d6478bd642f
		h0, l0 := bits.Mul64(w0, w0^0xe7037ed1a0b428db)
		h1, l1 := bits.Mul64(w1, w1^0xe7037ed1a0b428db)
		h2, l2 := bits.Mul64(w2, w2^0xe7037ed1a0b428db)
		h3, l3 := bits.Mul64(w3, w3^0xe7037ed1a0b428db)
		x0, x1, x2, x3 := h0^l0, h1^l1, h2^l2, h3^l3
		s0 := &slots[a0.base()+uint32(x0>>((64-a0.bits())&63))]
		s1 := &slots[a1.base()+uint32(x1>>((64-a1.bits())&63))]
		s2 := &slots[a2.base()+uint32(x2>>((64-a2.bits())&63))]
		s3 := &slots[a3.base()+uint32(x3>>((64-a3.bits())&63))]
		_, k0 := bits.Sub64(x0<<(a0.bits()&63), s0.cut, 0)
		_, k1 := bits.Sub64(x1<<(a1.bits()&63), s1.cut, 0)
		_, k2 := bits.Sub64(x2<<(a2.bits()&63), s2.cut, 0)
		_, k3 := bits.Sub64(x3<<(a3.bits()&63), s3.cut, 0)
		e0 := s0.alias ^ ((s0.alias ^ s0.entry) & -int32(k0))
		e1 := s1.alias ^ ((s1.alias ^ s1.entry) & -int32(k1))
		e2 := s2.alias ^ ((s2.alias ^ s2.entry) & -int32(k2))
		e3 := s3.alias ^ ((s3.alias ^ s3.entry) & -int32(k3))
		b0[n], b1[n], b2[n], b3[n] = e0, e1, e2, e3
		n++
		a0, a1, a2, a3 = next[e0], next[e1], next[e2], next[e3]
		if a0.leaf() == t0 || a1.leaf() == t1 || a2.leaf() == t2 || a3.leaf() == t3 {
			break
		}
	}
	ls[0].at, ls[1].at, ls[2].at, ls[3].at = a0, a1, a2, a3
	ls[0].r, ls[1].r, ls[2].r, ls[3].r = wyrand(w0), wyrand(w1), wyrand(w2), wyrand(w3)
	for k := range ls {
		ls[k].out.entries = ls[k].out.entries[:len(ls[k].out.entries)+n]
	}
	return n
}

// rolloutsLanes draws the rollouts that take hands out (take returns -1
// when none is left) into the lanes' workers, lanes at a time: begin sets
// rollout i up (its target and the walk's generator, drawn from its own
// stream) and finish records it once it hit or reached its horizon
// (horizon <= 0: no limit), its entries then the last of its lane's
// worker. A canceled ctx stops it within checkEvery
// transitions of every lane with ctx's error.
func (t *aliasTable) rolloutsLanes(ctx context.Context, outs []*agentWorker, horizon int, take func() int,
	begin func(i int) (target int, r wyrand), finish func(i int, out *agentWorker, hit bool)) error {
	if horizon <= 0 {
		horizon = math.MaxInt
	}
	var ls [lanes]lane
	var idle [lanes]agentWorker // an idle lane's walk
	start := func(l *lane) {
		if l.i = take(); l.i < 0 {
			return
		}
		target, r := begin(l.i)
		n := len(l.out.entries)
		l.at, l.r, l.target, l.end = t.start, r, uint32(target), n+horizon
		if l.end < n { // overflow
			l.end = math.MaxInt
		}
	}
	for k := range ls {
		ls[k].out = outs[k]
		start(&ls[k])
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		active := 0
		for k := range ls {
			if ls[k].i >= 0 {
				active++
			}
		}
		if active == 0 {
			return nil
		}
		if active > 1 {
			// Idle lanes walk on, toward no target, into scratch memory
			// that is dropped: two or three rollouts still gain from the
			// shared loop.
			steps := checkEvery
			for k := range ls {
				l := &ls[k]
				if l.i < 0 {
					idle[k].entries = idle[k].entries[:0]
					l.out, l.at, l.target, l.end = &idle[k], t.start, math.MaxUint32, math.MaxInt
				}
				steps = min(steps, l.end-len(l.out.entries))
			}
			for k := range ls {
				l := &ls[k]
				l.out.entries = slices.Grow(l.out.entries, steps)
			}
			t.walkLanes(&ls, steps)
		} else {
			for k := range ls {
				if l := &ls[k]; l.i >= 0 {
					l.out.entries, _ = t.walk(l.out.entries, &l.at, l.target, min(l.end, len(l.out.entries)+checkEvery), &l.r)
					break
				}
			}
		}
		for k := range ls {
			l := &ls[k]
			if l.i < 0 {
				continue
			}
			if hit := l.at.leaf() == l.target; hit || len(l.out.entries) >= l.end {
				finish(l.i, l.out, hit)
				start(l)
			}
		}
	}
}
