package experiment

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Code names the code this process runs: the commit it was built from
// (12 hex digits; "+dirty" when the build had uncommitted changes), or ""
// when that is unknown. go build stamps the commit into the binary (unless
// -buildvcs=false; go install path@version stamps the module version, whose
// commit a pseudo-version names); go run stamps none, so a go-run binary (built into the
// go tool's temporary folder) reads it from git in the working directory
// when that is a checkout of this module. A run records the Code of every
// process that trained it (Summary.Code), so a page built from runs can
// say which code made them, not only which code aggregated them.
func Code() string {
	rev, dirty := BuildRevision()
	bi, ok := debug.ReadBuildInfo()
	if rev == "" && ok && goRun() {
		rev, dirty = GitRevision(".", bi.Main.Path)
	}
	if rev == "" && ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return moduleCode(bi.Main.Version) // go install module@version stamps no VCS revision
	}
	return ShortRevision(rev, dirty, "+dirty")
}

// moduleCode names the code of a binary built from a module version (go
// install path@version): a pseudo-version's commit (v0.0.0-20261126131233-
// f299dc02bb95 -> f299dc02bb95), else the version itself (a tag).
func moduleCode(version string) string {
	v, meta, _ := strings.Cut(version, "+")
	if i := strings.LastIndexByte(v, '-'); i >= 0 && len(v)-i-1 == 12 {
		if _, err := strconv.ParseUint(v[i+1:], 16, 64); err == nil {
			return ShortRevision(v[i+1:], meta == "dirty", "+dirty")
		}
	}
	return version
}

// ShortRevision is rev's first 12 hex digits, followed by mark when dirty
// (uncommitted changes); "" when rev is.
func ShortRevision(rev string, dirty bool, mark string) string {
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += mark
	}
	return rev
}

// BuildRevision is the VCS revision stamped into the binary and whether
// the build had uncommitted changes ("" when none is stamped).
func BuildRevision() (rev string, dirty bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}

// GitRevision is the commit checked out in dir's git repository and
// whether its tracked files (those of git's pathspec, relative to dir,
// when given) have uncommitted changes; "" outside a repository, or when
// module is not "" and the repository's go.mod declares another module.
func GitRevision(dir, module string, pathspec ...string) (rev string, dirty bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	top, err := exec.Command("git", "-C", abs, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", false
	}
	if module != "" {
		mod, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(top)), "go.mod"))
		if err != nil || !bytes.Contains(mod, []byte("module "+module+"\n")) {
			return "", false
		}
	}
	out, err := exec.Command("git", "-C", abs, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	args := []string{"-C", abs, "status", "--porcelain", "--untracked-files=no"}
	if len(pathspec) > 0 {
		args = append(append(args, "--"), pathspec...)
	}
	st, err := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out)), err == nil && len(bytes.TrimSpace(st)) > 0
}

// goRun reports whether this binary was built by go run: into a go-build
// folder under the temporary directory.
func goRun() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	return strings.Contains(filepath.ToSlash(exe), "/go-build")
}

// withCode appends code to the codes that trained a run so far, unless it
// is the last of them: the list names each change of code once, in order
// ("" is unknown code).
func withCode(codes []string, code string) []string {
	if len(codes) > 0 && codes[len(codes)-1] == code {
		return codes
	}
	return append(append([]string(nil), codes...), code)
}
