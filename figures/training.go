package figures

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Theory is a horizontal line of a hitting-time figure (0: none).
type Theory struct {
	Y     float64
	Label string
}

// Hitting draws Figure 3: a hitting time against training steps, log
// scale, with the pretrained H_0 and the run's limit as dashed lines.
// Points that are not positive and finite are left out; nothing is drawn
// when none remains.
func Hitting(path, title, curve string, steps, h []float64, h0, limit Theory) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "training step"
	p.X.Tick.Marker = stepTicks{}
	p.Y.Label.Text = "expected hitting time H_f (transitions, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	xy := make(plotter.XYs, 0, len(steps))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, y := range h {
		if y > 0 && !math.IsInf(y, 0) {
			xy = append(xy, plotter.XY{X: steps[i], Y: y})
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	if len(xy) == 0 {
		return nil
	}
	line, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	line.Color, line.Width = color.RGBA{R: 31, G: 119, B: 180, A: 255}, vg.Points(2)
	p.Add(line)
	p.Legend.Add(curve, line)
	x0, x1 := xy[0].X, xy[len(xy)-1].X
	if x1 == x0 {
		x1 = x0 + 1
	}
	for _, th := range []struct {
		Theory
		c color.Color
	}{{h0, color.RGBA{R: 214, G: 39, B: 40, A: 255}}, {limit, color.RGBA{R: 44, G: 160, B: 44, A: 255}}} {
		if th.Y <= 0 {
			continue
		}
		if err := hline(p, th.Y, x0, x1, th.Label, th.c); err != nil {
			return err
		}
		lo, hi = math.Min(lo, th.Y), math.Max(hi, th.Y)
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// depthColor shades depth j of k from dark (j = 1) to light (j = k).
func depthColor(j, k int) color.Color {
	t := 0.0
	if k > 1 {
		t = float64(j-1) / float64(k-1)
	}
	return color.RGBA{R: uint8(20 + 200*t), G: uint8(40 + 120*t), B: uint8(120 + 100*(1-t)), A: 255}
}

// ABCD draws Figure 4: a_j, b_j, c_j, d_j against training steps, one
// panel each, one curve per depth. rows are abcd.csv's: step, depth, a, b,
// c, d.
func ABCD(path, title string, rows [][]float64) error {
	k := 0
	for _, r := range rows {
		k = max(k, int(r[1]))
	}
	if k == 0 {
		return nil
	}
	names := []string{"a_j: forward at R_j^+", "b_j: backtrack at R_j^-", "c_j: forward at L_j^+", "d_j: backtrack at L_j^-"}
	plots := [][]*plot.Plot{{nil, nil}, {nil, nil}}
	for q := range 4 {
		p := plot.New()
		p.Title.Text = names[q]
		p.X.Label.Text = "training step"
		p.X.Tick.Marker = stepTicks{}
		p.Y.Label.Text = "probability"
		p.Y.Min, p.Y.Max = 0, 1.02
		for j := 1; j <= k; j++ {
			var xy plotter.XYs
			for _, r := range rows {
				if int(r[1]) == j && !math.IsNaN(r[2+q]) { // NaN: a depth never visited
					xy = append(xy, plotter.XY{X: r[0], Y: r[2+q]})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = depthColor(j, k)
			p.Add(l)
			if q == 0 && (k <= 8 || j == 1 || j == k) {
				p.Legend.Add(fmt.Sprintf("depth j=%d", j), l)
			}
		}
		p.Legend.Top, p.Legend.Left = false, false
		plots[q/2][q%2] = p
	}
	return grid(path, title, plots, 10*vg.Inch, 7*vg.Inch)
}

// InvalidMass draws Theorem 1: the largest mass a state puts on invalid
// transitions, and its ratio to the bound n_s/(m_s + t), against steps.
func InvalidMass(path, title string, steps, invalid, ratio []float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "training step"
	p.X.Tick.Marker = stepTicks{}
	p.Y.Label.Text = "max over states (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, c := range []struct {
		y     []float64
		label string
		color color.Color
	}{{invalid, "mass on invalid transitions 1 - p_s(t)", color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{ratio, "ratio to the bound n_s/(m_s + t) (<= 1)", color.RGBA{R: 214, G: 39, B: 40, A: 255}}} {
		var xy plotter.XYs
		for j, y := range c.y {
			if y > 0 {
				xy = append(xy, plotter.XY{X: steps[j], Y: y})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = c.color, vg.Points(2)
		if i == 1 {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(c.label, l)
	}
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}
