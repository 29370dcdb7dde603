package figures

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// attentionGrid is the heat map's grid: column d < len(rows) is the token
// d positions back, the column after them the prompt (when there is one);
// row q the query position. Cells a query cannot see, and rows without
// positions, are NaN.
type attentionGrid struct {
	rows   [][]float64 // rows[q][d]
	prompt []float64   // prompt[q], nil without a prompt
	counts []int
}

func (g attentionGrid) Dims() (c, r int) {
	c = len(g.rows)
	if g.prompt != nil {
		c++
	}
	return c, len(g.rows)
}

func (g attentionGrid) Z(c, r int) float64 {
	switch {
	case g.counts[r] == 0:
		return math.NaN()
	case c == len(g.rows):
		return g.prompt[r]
	case c < len(g.rows[r]):
		return g.rows[r][c]
	}
	return math.NaN()
}

func (g attentionGrid) X(c int) float64 { return float64(c) }
func (g attentionGrid) Y(r int) float64 { return float64(r) }

// Attention draws a transformer's mean attention as a heat map: rows are
// the query's position in the rollout (the last row pools every position
// whose window is full), columns the key's distance back from the query
// (0: the query's own token) and, with a prompt, the prompt; each cell is
// labelled with its weight. rows[q][d] is the weight at position q and
// distance d, prompt[q] the prompt's (nil without one), counts[q] the
// positions behind row q (0: the row is left blank).
func Attention(path, title string, rows [][]float64, prompt []float64, counts []int) error {
	c := len(rows)
	if c == 0 || len(counts) != c || (prompt != nil && len(prompt) != c) {
		return fmt.Errorf("figures: attention: %d rows, %d counts, %d prompt weights", c, len(counts), len(prompt))
	}
	grid := attentionGrid{rows: rows, prompt: prompt, counts: counts}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(0)
	cm.SetMax(1)
	hm := plotter.NewHeatMap(grid, cm.Palette(255))
	hm.Min, hm.Max, hm.NaN = 0, 1, color.White
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "key: tokens back from the query (0: its own token)"
	p.Y.Label.Text = "query: position in the rollout"
	p.Add(hm)
	var cells plotter.XYLabels
	cols, nrows := grid.Dims()
	for r := range nrows {
		for col := range cols {
			if z := grid.Z(col, r); !math.IsNaN(z) {
				cells.XYs = append(cells.XYs, plotter.XY{X: float64(col), Y: float64(r)})
				cells.Labels = append(cells.Labels, strconv.FormatFloat(z, 'f', 3, 64))
			}
		}
	}
	if len(cells.XYs) > 0 {
		labels, err := plotter.NewLabels(cells)
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].XAlign, labels.TextStyle[i].YAlign = -0.5, -0.5
		}
		p.Add(labels)
	}
	var xt, yt []plot.Tick
	for d := range c {
		xt = append(xt, plot.Tick{Value: float64(d), Label: strconv.Itoa(d)})
		label := strconv.Itoa(d)
		if d == c-1 {
			label = ">= " + label
		}
		yt = append(yt, plot.Tick{Value: float64(d), Label: label})
	}
	if prompt != nil {
		xt = append(xt, plot.Tick{Value: float64(c), Label: "prompt"})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(xt), plot.ConstantTicks(yt)
	return p.Save(vg.Length(cols+2)*1.1*vg.Inch, vg.Length(c+2)*0.7*vg.Inch, path)
}
