package tasks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultMaxBytes is the default memory budget for one graph and the per-state
// tables built over it (8 GiB: a third of the project's 24 GiB machines, leaving
// room for the evaluator and the model).
const DefaultMaxBytes int64 = 8 << 30

// Config describes a world graph: either the paper's homogeneous graph (W
// branches of K diamonds of L multiedges) or a heterogeneous one given by
// Branches.
type Config struct {
	W int `json:"W,omitempty"` // number of branches (>= 1); ignored when Branches is set
	K int `json:"K,omitempty"` // diamonds per branch (>= 1); ignored when Branches is set
	L int `json:"L,omitempty"` // multiedges per diamond (>= 1); ignored when Branches is set
	// Branches, when non-empty, makes a heterogeneous graph: Branches[i][j] is
	// the number of multiedges of diamond j+1 on branch i+1, so branch i+1 has
	// depth len(Branches[i]).
	Branches [][]int `json:"branches,omitempty"`
	// MaxBytes refuses graphs whose estimated memory exceeds it (0 means
	// DefaultMaxBytes).
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// DefaultConfig is the paper's main size, W=K=15, L=5 (Figures 3-4).
func DefaultConfig() Config { return Config{W: 15, K: 15, L: 5} }

// Shape returns the multiedge counts of every diamond, branch by branch,
// expanding a homogeneous configuration.
func (c Config) Shape() [][]int {
	if len(c.Branches) > 0 {
		return c.Branches
	}
	s := make([][]int, c.W)
	for i := range s {
		s[i] = make([]int, c.K)
		for j := range s[i] {
			s[i][j] = c.L
		}
	}
	return s
}

// ShortestPath is the fewest transitions from s0 -> f to a leaf,
// 2 min_i k_i + 1 (into the shallowest branch, across its k diamonds and
// k-1 connectors, to its leaf): no hitting time, exact or estimated, of
// any policy is below it.
func (c Config) ShortestPath() float64 {
	k := math.MaxInt
	for _, b := range c.Shape() {
		k = min(k, len(b))
	}
	return float64(2*k + 1)
}

// Homogeneous reports whether every branch has the same depth and every
// diamond the same number of multiedges, returning that W, K, L.
func (c Config) Homogeneous() (w, k, l int, ok bool) {
	if len(c.Branches) == 0 {
		return c.W, c.K, c.L, true
	}
	k, l = len(c.Branches[0]), c.Branches[0][0]
	for _, b := range c.Branches {
		if len(b) != k {
			return 0, 0, 0, false
		}
		for _, m := range b {
			if m != l {
				return 0, 0, 0, false
			}
		}
	}
	return len(c.Branches), k, l, true
}

// Name is a short readable name: "W=15,K=15,L=5" for a homogeneous graph,
// the branch spec otherwise.
func (c Config) Name() string {
	if w, k, l, ok := c.Homogeneous(); ok {
		return fmt.Sprintf("W=%d,K=%d,L=%d", w, k, l)
	}
	return FormatBranches(c.Branches)
}

// maxSide bounds each of W, K, L so that size arithmetic cannot overflow
// before the memory check sees it.
const maxSide = 1 << 20

// Validate checks the sizes and the memory estimate without allocating the
// graph. Its errors name the field and the allowed range.
func (c Config) Validate() error {
	if c.MaxBytes < 0 {
		return fmt.Errorf("tasks: max_bytes=%d: must be >= 0 (0 means the default %d)", c.MaxBytes, DefaultMaxBytes)
	}
	sides := []struct {
		name string
		v    int
	}{{"W", c.W}, {"K", c.K}, {"L", c.L}}
	if len(c.Branches) > 0 && (c.W != 0 || c.K != 0 || c.L != 0) {
		var given []string // only those set: a -W on a config's branches leaves K and L at 0
		for _, f := range sides {
			if f.v != 0 {
				given = append(given, fmt.Sprintf("%s=%d", f.name, f.v))
			}
		}
		return fmt.Errorf("tasks: %s and branches: give W, K, L or branches, not both", strings.Join(given, ", "))
	}
	if len(c.Branches) == 0 {
		for _, f := range sides {
			if f.v < 1 || f.v > maxSide {
				return fmt.Errorf("tasks: %s=%d: must be an integer in [1, %d]", f.name, f.v, maxSide)
			}
		}
	} else {
		if len(c.Branches) > maxSide {
			return fmt.Errorf("tasks: branches: %d branches: at most %d allowed", len(c.Branches), maxSide)
		}
		for i, b := range c.Branches {
			if len(b) < 1 || len(b) > maxSide {
				return fmt.Errorf("tasks: branches: branch %d has %d diamonds: want 1 to %d", i+1, len(b), maxSide)
			}
			for j, m := range b {
				if m < 1 || m > maxSide {
					return fmt.Errorf("tasks: branches: diamond %d of branch %d has %d multiedges: want 1 to %d", j+1, i+1, m, maxSide)
				}
			}
		}
	}
	states, transitions := c.Size()
	budget := c.Budget()
	if est := EstimateBytes(states, transitions); est > float64(budget) {
		return fmt.Errorf("tasks: graph too large: %.0f states and %.0f transitions need about %s, over the budget of %s (max_bytes)",
			states, transitions, HumanBytes(est), HumanBytes(float64(budget)))
	}
	return nil
}

// Size counts the directed edge states and valid transitions without building
// the graph. Counts are float64 so that absurd sizes cannot overflow.
func (c Config) Size() (states, transitions float64) {
	// A diamond of m multiedges adds 2m states; both of its nodes have degree
	// m+1, and every arrival at a node may leave by any of its departures.
	diamond := func(m float64) (float64, float64) { return 2 * m, 2 * (m + 1) * (m + 1) }
	// A branch of depth k adds its entry and fork-incoming states, k-1 inner
	// connectors and the leaf pair (4 + 2(k-1) states); the leaf bounces.
	branch := func(k float64) (float64, float64) { return 4 + 2*(k-1), 1 }
	var w float64
	if len(c.Branches) == 0 {
		w = float64(c.W)
		ds, dt := diamond(float64(c.L))
		bs, bt := branch(float64(c.K))
		states = w * (bs + float64(c.K)*ds)
		transitions = w * (bt + float64(c.K)*dt)
	} else {
		w = float64(len(c.Branches))
		for _, b := range c.Branches {
			bs, bt := branch(float64(len(b)))
			states, transitions = states+bs, transitions+bt
			for _, m := range b {
				ds, dt := diamond(float64(m))
				states, transitions = states+ds, transitions+dt
			}
		}
	}
	// s0 -> f, and the fork: W fork-incoming states and s0 -> f, each with W entries.
	return states + 1, transitions + (w+1)*w
}

// EstimateBytes is the memory a graph of the given size needs together with
// what is built over it: per state the State record, CSR offset, token
// name and the evaluator's eight value arrays; per valid transition the CSR
// entry, policy and sampler tables, the model's logits, parameters,
// log-probabilities, gradients and optimiser moments, and the gradient
// weights.
func EstimateBytes(states, transitions float64) float64 {
	const perState = 64 + 8 + 32 + 8*8
	const perTransition = 8 * 12
	return states*perState + transitions*perTransition
}

// HumanBytes prints a number of bytes with a binary unit: 1.5 GiB.
func HumanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == len(units)-1 && b >= 1024 {
		return fmt.Sprintf("%.3g %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// ParseBranches parses a heterogeneous branch spec such as "2,2,3;5,1;4,4,4,4":
// ';' separates branches, ',' the multiedge counts of a branch's diamonds.
func ParseBranches(spec string) ([][]int, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("tasks: branches %q: empty spec: want e.g. \"2,2,3;5,1\" (';' between branches, ',' between diamonds' multiedge counts)", spec)
	}
	parts := strings.Split(spec, ";")
	out := make([][]int, 0, len(parts))
	for i, p := range parts {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("tasks: branches %q: branch %d is empty: want comma-separated multiedge counts >= 1", spec, i+1)
		}
		fields := strings.Split(p, ",")
		b := make([]int, 0, len(fields))
		for j, f := range fields {
			f = strings.TrimSpace(f)
			m, err := strconv.Atoi(f)
			if err != nil || m < 1 || m > maxSide {
				return nil, fmt.Errorf("tasks: branches %q: diamond %d of branch %d is %q: want an integer in [1, %d]", spec, j+1, i+1, f, maxSide)
			}
			b = append(b, m)
		}
		out = append(out, b)
	}
	if len(out) > maxSide {
		return nil, fmt.Errorf("tasks: branches %q: %d branches: at most %d allowed", spec, len(out), maxSide)
	}
	return out, nil
}

// FormatBranches is the inverse of ParseBranches.
func FormatBranches(b [][]int) string {
	var sb strings.Builder
	for i, br := range b {
		if i > 0 {
			sb.WriteByte(';')
		}
		for j, m := range br {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(m))
		}
	}
	return sb.String()
}

// Budget is the memory budget in bytes: MaxBytes, or DefaultMaxBytes when
// it is 0.
func (c Config) Budget() int64 {
	if c.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return c.MaxBytes
}
