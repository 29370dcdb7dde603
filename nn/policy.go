package nn

import G "gorgonia.org/gorgonia"

// Policy is what every trainer needs of a model: the graph its loss is
// built in and the parameters its gradient is taken with respect to. The
// loss itself is a weighted sum of log-probabilities of "items" the model
// exposes: a Bigram's items are its transitions (Bigram.LogProbs, one per
// trainable support entry, so a batch is aggregated before it enters the
// graph), a Transformer's are the tokens of a batch of windows
// (TransformerBatch.Taken) and their full next-token rows
// (TransformerBatch.LogProbs), and the tokens of its table pass are a
// TableBatch's, laid out alike. The trainers' losses (cross-entropy,
// REINFORCE, PPO's clipped surrogate, KL and entropy terms) take such item
// vectors and know nothing else of the model.
type Policy interface {
	Graph() *G.ExprGraph
	Learnables() G.Nodes
}

// Compile-time interface checks.
var (
	_ Policy = (*Bigram)(nil)
	_ Policy = (*Transformer)(nil)
)
