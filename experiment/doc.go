// Package experiment is the library behind train run: a run's configuration
// (Config, read from JSON or built in Go, resolved with the trainers'
// defaults), Run and Resume, which train it into a run folder, and the
// folder itself: config.json, vocab.txt, metrics.csv (its columns defined
// once, read back with ReadMetrics), abcd.csv, checkpoint.bin, the
// figures and summary.json, written last so that its presence marks a
// complete run. Errors caused by the input are InputErrors; a canceled
// context stops a run with a checkpoint and an *Interrupted error.
package experiment
