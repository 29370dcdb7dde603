// Package eval analyses policies on the world graphs of package tasks: exact
// Markov-chain analysis of bigram policies (hitting times H_f, visit counts
// d_x(s), hitting-time values h_x(s), the policy-gradient weights of Lemma
// 'policygrad', a_j..d_j per branch and depth, per copy or weighted by
// visits), the paper's closed forms, the exact optimum of RLVR over the rows
// it trains with a first-order certificate, and Monte Carlo rollouts. It
// needs transition probabilities, not gorgonia.
package eval
