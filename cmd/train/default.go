package main

import "io"

// runDefault runs the paper's headline experiment (Figures 3-4).
func runDefault(stdout, stderr io.Writer) error {
	return runEval([]string{"-policy", "pretrained"}, stdout, stderr)
}
