// Package tasks builds the paper's world multigraph (source s0, fork f, W
// branches of K diamonds of L multiedges, and heterogeneous variants), its
// directed edge states with their classes (L_j^±, R_j^±, fork-incoming,
// leaf-incoming), the valid transitions between them, golden shortest paths
// and the verifier. It knows no machine learning.
//
// States are numbered: 0 is s0 -> f; then branch by branch, edge group by
// edge group along the branch (the entry connector, diamond 1, the connector
// after it, ..., the leaf connector), each group's forward states followed by
// its backward states.
package tasks
