package tasks

import (
	"fmt"
)

// Class is the paper's type of a directed edge state (Section 4.1).
type Class uint8

const (
	// Source is s0 -> f, where every rollout starts.
	Source Class = iota
	// LPlus is L_j^+: u_{j-1,r} -> u_{j,l}, arrived at a diamond's left node
	// from the left (f -> u_{1,l} is L_1^+, the branch entry).
	LPlus
	// RPlus is R_j^+: u_{j,l} -> u_{j,r} over a multiedge.
	RPlus
	// LMinus is L_j^-: u_{j,r} -> u_{j,l} over a multiedge.
	LMinus
	// RMinus is R_j^-: u_{j+1,l} -> u_{j,r} (t -> u_{K,r} is R_K^-).
	RMinus
	// ForkIn is u_{1,l} -> f (the paper's R_0^-): uniform over the W entries, never trained.
	ForkIn
	// LeafIn is u_{K,r} -> t (the paper's L_{K+1}^+): bounces back deterministically.
	LeafIn
)

var classNames = [...]string{"source", "L+", "R+", "L-", "R-", "fork-in", "leaf-in"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", c)
}

// State is one directed edge state: a token of the model.
type State struct {
	Tail, Head int   // node ids
	Multi      int   // 1-based multiedge index inside a diamond, 0 for a single edge
	Class      Class // the paper's state type
	Branch     int   // 1-based branch, 0 for the source
	Depth      int   // j of L_j^±, R_j^±; 0 for fork-in, k+1 for leaf-in
	Group      int   // edge group along the branch: 0 entry connector, 2j-1 diamond j, 2j connector after diamond j
	Forward    bool  // points away from the fork
}

// Branch describes one branch's layout inside the state numbering.
type Branch struct {
	Multi []int // multiedges of each diamond (len = depth)
	// Start[g] is the id of the first forward state of edge group g; its
	// m_g forward states are followed by its m_g backward states.
	Start []int
	Leaf  int // node id of the leaf t_i
}

// Depth is the number of diamonds of the branch.
func (b Branch) Depth() int { return len(b.Multi) }

// Groups is the number of edge groups 2k+1.
func (b Branch) Groups() int { return len(b.Start) }

// M is the number of parallel edges of group g.
func (b Branch) M(g int) int {
	if g%2 == 0 {
		return 1
	}
	return b.Multi[(g-1)/2]
}

// Fwd is the id of the e-th (0-based) forward state of group g.
func (b Branch) Fwd(g, e int) int { return b.Start[g] + e }

// Bwd is the id of the e-th (0-based) backward state of group g.
func (b Branch) Bwd(g, e int) int { return b.Start[g] + b.M(g) + e }

// Entry is f -> u_{i,1,l}; ForkIn is u_{i,1,l} -> f; LeafIn is u_{i,k,r} -> t_i.
func (b Branch) Entry() int  { return b.Start[0] }
func (b Branch) ForkIn() int { return b.Start[0] + 1 }
func (b Branch) LeafIn() int { return b.Start[len(b.Start)-1] }

// Graph is the world multigraph with its directed edge states and valid
// transitions. Node 0 is s0, node 1 is f.
type Graph struct {
	Config   Config
	Nodes    []string // node names: s0, f, u{i}.{j}l, u{i}.{j}r, t{i}
	States   []State
	Branches []Branch
	// Offsets and Next list the valid next states of every state (CSR): state
	// s may move to Next[Offsets[s]:Offsets[s+1]], ascending ids.
	Offsets []int
	Next    []int
}

// Node ids of the source and the fork.
const (
	NodeSource = 0
	NodeFork   = 1
)

// New builds the graph after validating the configuration.
func New(c Config) (*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	shape := c.Shape()
	ns, nt := c.Size()
	g := &Graph{Config: c, Nodes: []string{"s0", "f"}}
	g.States = make([]State, 0, int(ns))
	g.States = append(g.States, State{Tail: NodeSource, Head: NodeFork, Class: Source})
	for i, multi := range shape {
		g.addBranch(i+1, multi)
	}
	g.buildNext(int(nt))
	return g, nil
}

// addBranch appends branch i's nodes and states: group by group, forward
// states then backward states.
func (g *Graph) addBranch(i int, multi []int) {
	k := len(multi)
	// path[p] is the node at position p along the branch: f, u_{1,l}, u_{1,r}, ..., u_{k,r}, t.
	path := make([]int, 2*k+2)
	path[0] = NodeFork
	for j := 1; j <= k; j++ {
		path[2*j-1] = g.addNode(fmt.Sprintf("u%d.%dl", i, j))
		path[2*j] = g.addNode(fmt.Sprintf("u%d.%dr", i, j))
	}
	path[2*k+1] = g.addNode(fmt.Sprintf("t%d", i))
	b := Branch{Multi: multi, Start: make([]int, 2*k+1), Leaf: path[2*k+1]}
	for grp := 0; grp <= 2*k; grp++ {
		b.Start[grp] = len(g.States)
		m := b.M(grp)
		for dir := 0; dir < 2; dir++ {
			fwd := dir == 0
			cls, depth := classOf(grp, k, fwd)
			for e := 0; e < m; e++ {
				s := State{Tail: path[grp], Head: path[grp+1], Class: cls, Branch: i, Depth: depth, Group: grp, Forward: fwd}
				if !fwd {
					s.Tail, s.Head = s.Head, s.Tail
				}
				if grp%2 == 1 {
					s.Multi = e + 1
				}
				g.States = append(g.States, s)
			}
		}
	}
	g.Branches = append(g.Branches, b)
}

// classOf maps an edge group and direction to the paper's state type and depth.
func classOf(grp, k int, fwd bool) (Class, int) {
	switch {
	case grp%2 == 1 && fwd:
		return RPlus, (grp + 1) / 2
	case grp%2 == 1:
		return LMinus, (grp + 1) / 2
	case grp == 2*k && fwd:
		return LeafIn, k + 1
	case grp == 0 && !fwd:
		return ForkIn, 0
	case fwd:
		return LPlus, grp/2 + 1
	default:
		return RMinus, grp / 2
	}
}

func (g *Graph) addNode(name string) int {
	g.Nodes = append(g.Nodes, name)
	return len(g.Nodes) - 1
}

// buildNext fills the CSR of valid transitions: from a state u -> v, every
// state v -> w (multiedges distinct, the reverse of the state included).
func (g *Graph) buildNext(nnz int) {
	g.Offsets = make([]int, len(g.States)+1)
	g.Next = make([]int, 0, nnz)
	entries := make([]int, len(g.Branches))
	for i, b := range g.Branches {
		entries[i] = b.Entry()
	}
	for s, st := range g.States {
		g.Offsets[s] = len(g.Next)
		if st.Head == NodeFork {
			g.Next = append(g.Next, entries...)
			continue
		}
		b := g.Branches[st.Branch-1]
		// The head is node position p along the branch; its departures are
		// the backward states of group p-1 and the forward states of group p.
		p := st.Group + 1
		if !st.Forward {
			p = st.Group
		}
		for e := 0; e < b.M(p-1); e++ {
			g.Next = append(g.Next, b.Bwd(p-1, e))
		}
		if p < b.Groups() {
			for e := 0; e < b.M(p); e++ {
				g.Next = append(g.Next, b.Fwd(p, e))
			}
		}
	}
	g.Offsets[len(g.States)] = len(g.Next)
}

// W is the number of branches (and targets).
func (g *Graph) W() int { return len(g.Branches) }

// NumStates is the number of directed edge states.
func (g *Graph) NumStates() int { return len(g.States) }

// Row returns the valid next states of s.
func (g *Graph) Row(s int) []int { return g.Next[g.Offsets[s]:g.Offsets[s+1]] }

// Entry is the CSR entry of the transition s -> next (an index into Next),
// or -1 when next is not a valid next state of s.
func (g *Graph) Entry(s, next int) int {
	for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
		if g.Next[e] == next {
			return e
		}
	}
	return -1
}

// Name is the readable name of state s, e.g. "f>u1.1l" or "u1.1l>u1.1r#3".
func (g *Graph) Name(s int) string {
	st := g.States[s]
	n := g.Nodes[st.Tail] + ">" + g.Nodes[st.Head]
	if st.Multi > 0 {
		n += fmt.Sprintf("#%d", st.Multi)
	}
	return n
}

// Trained reports whether the row of state s is ever trained: fork-incoming
// rows stay uniform (the paper fixes them) and the leaf-incoming row has a
// single valid transition.
func (g *Graph) Trained(s int) bool {
	c := g.States[s].Class
	return c != ForkIn && c != LeafIn
}

// Hits is the verifier: state s reaches target branch t (1-based) when its
// head is the leaf t_t.
func (g *Graph) Hits(s, target int) bool {
	return g.States[s].Head == g.Branches[target-1].Leaf
}
