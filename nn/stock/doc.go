// Package stock builds the transformer's layers, and the losses' other
// pieces, from gorgonia's stock ops only, so that gorgonia's symbolic
// autodiff (G.Grad) derives every gradient: the design's literal form of
// the model, slow but written without a single hand derivative.
//
// It is two things: the reference every hand-written derivative of
// package ops is checked against (each op's test builds the same function
// here and compares values and autodiff gradients on random inputs of
// several shapes), and, through nn's Ops "stock" (train run -ops stock),
// a model the trainers can train end to end.
//
// Where a stock op of gorgonia v0.9.18 is wrong the same function is built
// from stock ops that are right: SoftMax and LogSoftMax take each row's
// maximum from the first element of the whole tensor and merge with each
// other, and LogSumExp adds the maximum inside the log (bugs_test.go pins
// each), so LogSoftmax here is Max, BroadcastSub, Exp, Sum and Log. Gathers
// are G.ByIndices, whose values and gradients bugs_test.go checks against
// plain Go (TestByIndices).
//
// Every function takes nodes of one graph and returns nodes of it; index
// vectors (Int) and masks are input nodes the caller fills with G.Let
// (ops.Layout.Indices and ops.TableLayout.Indices compute them).
package stock
