package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile: the repository's Dockerfile builds the image that the
// printed Kubernetes job names by default (sweep's -image), from the Go
// version go.mod asks for, with this command statically linked on PATH and
// the commit stamped into it.
// (The image itself needs a Docker engine to build; the test reads the
// file.)
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(mod))
	if goVersion == nil {
		t.Fatal("go.mod names no go version")
	}
	for _, want := range []string{
		"FROM golang:" + goVersion[1] + " AS build",
		"RUN CGO_ENABLED=0 go build -trimpath -o /out/train ./cmd/train",
		"COPY --from=build /out/train /usr/local/bin/train",
		`ENTRYPOINT ["train"]`,
		"docker build -t " + defaultImage + " .",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// go build stamps the commit only from a build context with .git:
	// without it the image's runs record no code (summary.json's code).
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ignore), "\n") {
		if l := strings.Trim(strings.TrimSpace(line), "/"); l == ".git" || l == ".git*" || l == "**/.git" {
			t.Errorf(".dockerignore leaves out .git (%q): the image's binary would record no commit", line)
		}
	}
}
