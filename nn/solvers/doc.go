// Package solvers holds the optimisers the trainers update parameters
// with: sign gradient descent (the paper's), SGD and Adam, each a
// gorgonia G.Solver whose state a checkpoint saves and restores exactly
// (Solver), and Groups, one solver and learning rate per group of
// parameters.
//
// A solver only reads the gradients gorgonia's autodiff left on the
// parameters (G.ValueGrad) and writes the parameters in place; it
// differentiates nothing. Adam is checked over 25 steps against gorgonia's
// own AdamSolver on a stock graph (TestAdamMatchesGorgonia), whose
// unexported state could not be checkpointed (Adam says why it exists).
package solvers
