package sweep

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The values a printed job file holds come from the spec, its file name,
// the command line and the working directory, often someone else's: each
// is checked here before anything is printed, so that it stays one value
// of the file's syntax (no line break can start a command or a key), and
// each engine's own fields (memory, time, partition, image, claim, mount)
// take that engine's syntax only.

// checkText refuses a value with a control character (a line break,
// carriage return, tab, escape, DEL, NEL...), a Unicode line or paragraph
// separator (YAML reads them as line breaks) or invalid UTF-8. field names
// it in the message, which shows the value quoted (%q) on one line.
func checkText(field, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s %q: not valid UTF-8", field, v)
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("%s %q: holds the control character %U: want printable text (a job file would read it as a line break or worse)", field, v, r)
		}
	}
	return nil
}

// The engines' own syntax.
var (
	// Slurm's --mem: megabytes, or a number with a unit K, M, G or T
	// (sbatch's str_to_mbytes).
	slurmMem = regexp.MustCompile(`^[0-9]+[KMGTkmgt]?$`)
	// Slurm's --time: minutes, minutes:seconds, hours:minutes:seconds,
	// days-hours, days-hours:minutes, days-hours:minutes:seconds, or no
	// limit.
	slurmTime = regexp.MustCompile(`^([0-9]+(:[0-9]+){0,2}|[0-9]+-[0-9]+(:[0-9]+){0,2}|(?i:infinite|unlimited))$`)
	// Slurm's --partition: one name or a comma-separated list.
	slurmPartition = regexp.MustCompile(`^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$`)
	// A Kubernetes quantity of bytes: a decimal number with a binary
	// (Ki..Ei) or decimal (k..E) suffix, or an exponent.
	k8sMem = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|[eE][0-9]+)?$`)
	// A container image reference: [registry[:port]/]path[:tag][@digest],
	// the path's components lower-case (the distribution reference
	// grammar).
	k8sImage = regexp.MustCompile(`^([A-Za-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
	// A Kubernetes object name (RFC 1123 subdomain): a persistent volume
	// claim's.
	k8sName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// checkValues checks what every job file holds: the spec's name and path,
// the sweep's folder, the binary.
func (c Cluster) checkValues(p *Plan) error {
	for _, f := range []struct{ field, v string }{
		{"spec name", p.Spec.Name}, {"spec file", c.Spec}, {"out (the sweep's folder)", p.Out}, {"-binary", c.Binary},
	} {
		if err := checkText(f.field, f.v); err != nil {
			return err
		}
	}
	return nil
}

// checkSlurm checks the values of an sbatch script.
func (c Cluster) checkSlurm(p *Plan) error {
	if err := c.checkValues(p); err != nil {
		return err
	}
	if err := checkText("working directory", c.Dir); err != nil {
		return err
	}
	if strings.Contains(p.Out, `\`) {
		return fmt.Errorf("out (the sweep's folder) %q: holds a backslash, which turns off Slurm's %%A and %%a in the task logs' names: want a path without one", p.Out)
	}
	switch {
	case c.Mem != "" && !slurmMem.MatchString(c.Mem):
		return fmt.Errorf("-mem %q: want Slurm's memory: megabytes, or a number with a unit K, M, G or T (4G, 500M, 4096)", c.Mem)
	case c.Time != "" && !slurmTime.MatchString(c.Time):
		return fmt.Errorf("-time %q: want one of Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes, days-hours:minutes:seconds (02:00:00, 1-12), or UNLIMITED", c.Time)
	case c.Partition != "" && !slurmPartition.MatchString(c.Partition):
		return fmt.Errorf("-partition %q: want a partition name of letters, digits, '.', '_' and '-' (or several, comma-separated)", c.Partition)
	}
	return nil
}

// checkKubernetes checks the values of an Indexed Job manifest.
func (c Cluster) checkKubernetes(p *Plan) error {
	if err := c.checkValues(p); err != nil {
		return err
	}
	switch {
	case c.Mem != "" && !k8sMem.MatchString(c.Mem):
		return fmt.Errorf("-mem %q: want a Kubernetes quantity of bytes: a number with a suffix Ki, Mi, Gi, Ti (binary) or k, M, G, T (decimal), e.g. 4Gi, 512Mi", c.Mem)
	case !k8sImage.MatchString(c.Image):
		return fmt.Errorf("-image %q: want a container image reference: [registry[:port]/]name[:tag][@digest], lower-case name (backtrack-train:latest, ghcr.io/me/train:v1)", c.Image)
	case len(c.Claim) > 253 || !k8sName.MatchString(c.Claim):
		return fmt.Errorf("-claim %q: want a persistent volume claim's name: lower-case letters, digits, '-' and '.', at most 253 characters", c.Claim)
	case !path.IsAbs(c.Mount) || strings.Contains(c.Mount, ":"):
		return fmt.Errorf("-mount %q: want an absolute path without ':' (/sweep)", c.Mount)
	case strings.Contains(c.Binary, "/") && !path.IsAbs(c.Binary):
		// The pod works in the claim's mount (workingDir), not in the
		// image's folder: ./train would be looked for on the claim.
		return fmt.Errorf("-binary %q: want a name on the image's PATH (train) or an absolute path in the image: the pod works in -mount's folder", c.Binary)
	case strings.HasPrefix(c.claimPath(p.Out), "../") || c.claimPath(p.Out) == "..":
		return fmt.Errorf("out (the sweep's folder) %q: leaves the claim: want a folder on it", p.Out)
	}
	return checkText("-mount", c.Mount)
}

// claimPath is the sweep's folder on the claim: out itself, or the last
// element of an absolute out.
func (c Cluster) claimPath(out string) string {
	if path.IsAbs(out) {
		return path.Base(out)
	}
	return path.Clean(out)
}
