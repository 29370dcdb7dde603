package figures

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Band is a curve with an interval around it: a mean over seeds and its
// 95% interval, say.
type Band struct {
	Name            string
	X, Mean, Lo, Hi []float64
}

// Bands draws curves with shaded intervals and optional dashed horizontal
// lines, with a legend. With logY, points whose mean is not positive are
// left out and a lower edge at or below 0 is drawn at the smallest
// positive value shown.
func Bands(path, title, xlabel, ylabel string, logY bool, bands []Band, lines []Theory) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.X.Tick.Marker = stepTicks{}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	floor, x0, x1 := math.Inf(1), math.Inf(1), math.Inf(-1)
	for _, b := range bands {
		for i, m := range b.Mean {
			if m > 0 && !math.IsInf(m, 0) {
				floor = math.Min(floor, m)
				x0, x1 = math.Min(x0, b.X[i]), math.Max(x1, b.X[i])
			}
		}
	}
	if math.IsInf(floor, 1) {
		return nil // nothing to draw
	}
	for i, b := range bands {
		var mean, upper, lower plotter.XYs
		for j := range b.X {
			m, lo, hi := b.Mean[j], b.Lo[j], b.Hi[j]
			if logY && !(m > 0) || math.IsNaN(m) || math.IsInf(m, 0) {
				continue
			}
			if logY && !(lo > 0) {
				lo = floor
			}
			mean = append(mean, plotter.XY{X: b.X[j], Y: m})
			upper = append(upper, plotter.XY{X: b.X[j], Y: hi})
			lower = append(lower, plotter.XY{X: b.X[j], Y: lo})
		}
		if len(mean) == 0 {
			continue
		}
		c := Color(i)
		if len(mean) > 1 {
			poly := append(upper, reversed(lower)...)
			shade, err := plotter.NewPolygon(poly)
			if err != nil {
				return err
			}
			r, g, bl, _ := c.RGBA()
			shade.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 60}
			shade.LineStyle.Width = 0
			p.Add(shade)
		}
		l, err := plotter.NewLine(mean)
		if err != nil {
			return err
		}
		l.Color, l.Width = c, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(b.Name, l)
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	for i, th := range lines {
		if th.Y <= 0 {
			continue
		}
		if err := hline(p, th.Y, x0, x1, th.Label, color.Gray{Y: uint8(60 + 50*(i%3))}); err != nil {
			return err
		}
	}
	p.Legend.Top = true
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

func reversed(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i, p := range xy {
		out[len(xy)-1-i] = p
	}
	return out
}
