package sweep

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// writeFigures draws, per graph, each group's hitting time against the step:
// the mean over its seeds with a 95% band. A run that stopped early keeps
// its last value at later steps.
func writeFigures(dir string, groups []*Group, label []string) ([]string, error) {
	var graphs []string
	byGraph := map[string][]*Group{}
	for _, g := range groups {
		name := g.Fields["graph"]
		if _, ok := byGraph[name]; !ok {
			graphs = append(graphs, name)
		}
		byGraph[name] = append(byGraph[name], g)
	}
	var files []string
	for _, graph := range graphs {
		var bands []figures.Band
		limits := map[float64]bool{}
		for _, g := range byGraph[graph] {
			band := curve(g)
			if len(band.X) == 0 {
				continue
			}
			var parts []string
			for _, col := range label {
				if col != "graph" {
					parts = append(parts, g.Fields[col])
				}
			}
			if len(parts) == 0 {
				parts = []string{g.Fields["model"], g.Fields["trainer"]}
			}
			seeds := "seeds"
			if g.Counted == 1 {
				seeds = "seed"
			}
			band.Name = fmt.Sprintf("%s (%d %s)", strings.Join(parts, " "), g.Counted, seeds)
			bands = append(bands, band)
			if !math.IsNaN(g.Limit) && g.Limit > 0 {
				limits[g.Limit] = true
			}
		}
		if len(bands) == 0 {
			continue
		}
		var lines []figures.Theory
		for l := range limits {
			lines = append(lines, figures.Theory{Y: l, Label: "limit " + experiment.FormatNumber(l)})
		}
		sort.Slice(lines, func(i, j int) bool { return lines[i].Y < lines[j].Y })
		path := filepath.Join(dir, "hitting_time-"+graphSlug(byGraph[graph][0].Runs[0].Config.Graph)+".png")
		if err := figures.Bands(path, "Hitting time over seeds (mean, 95% band), graph "+graph, "training step",
			"hitting time (transitions, log scale)", true, bands, lines); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

// curve is a group's hitting time against the step over its counted
// runs (Band), its band kept above the graph's shortest path: a hitting
// time can be no less.
func curve(g *Group) figures.Band {
	var xs, ys [][]float64
	floor := 0.0
	for _, r := range g.Runs {
		if r.Problem != "" {
			continue
		}
		xs, ys = append(xs, r.Metrics.Column("step")), append(ys, r.Metrics.Column("hitting_time"))
		floor = r.Config.Graph.ShortestPath()
	}
	return Band(xs, ys, floor)
}

// Band is the mean of curves (xs[i], ys[i]), each with increasing x, and
// its Student t 95% interval: at each x of any curve, over the curves that
// have reached it (a curve that has ended keeps its last value). The
// interval's lower end is clipped at floor, the smallest value the
// quantity can take (a hitting time's: the graph's shortest path,
// tasks.Config.ShortestPath): with a few seeds the symmetric interval of a
// positive, skewed quantity reaches below where it can be, and on a log
// axis far below (the transformer's band dipped to 2 where the shortest
// path is 7).
func Band(xs, ys [][]float64, floor float64) figures.Band {
	steps := map[float64]bool{}
	for _, x := range xs {
		for _, v := range x {
			steps[v] = true
		}
	}
	var at []float64
	for x := range steps {
		at = append(at, x)
	}
	sort.Float64s(at)
	var band figures.Band
	for _, x := range at {
		var vals []float64
		for i := range xs {
			k := sort.SearchFloat64s(xs[i], x+0.5) - 1 // the last row at or before x
			if k >= 0 {
				vals = append(vals, ys[i][k])
			}
		}
		e := Mean95(vals)
		if e.N == 0 {
			continue
		}
		ci := e.CI95
		if math.IsNaN(ci) {
			ci = 0
		}
		band.X, band.Mean = append(band.X, x), append(band.Mean, e.Mean)
		band.Lo, band.Hi = append(band.Lo, max(e.Mean-ci, floor)), append(band.Hi, e.Mean+ci)
	}
	return band
}

// graphSlug names a graph in a file name: W3K3L2, or branches-2.2.3_5.1 for
// a heterogeneous one (as run folders do).
func graphSlug(g tasks.Config) string {
	if w, k, l, ok := g.Homogeneous(); ok {
		return fmt.Sprintf("W%dK%dL%d", w, k, l)
	}
	return "branches-" + strings.NewReplacer(";", "_", ",", ".").Replace(tasks.FormatBranches(g.Branches))
}
