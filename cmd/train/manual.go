package main

import _ "embed"

// manual is the text train help prints: manual.txt, the one copy of the
// manual. doc.go's package comment is generated from it
// (go test -run TestManualMatchesDoc -update).
//
//go:embed manual.txt
var manual string
