package figures

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// denseAt is the most points a curve has with markers and error bars;
// longer curves get a plain line and a shaded band.
const denseAt = 40

// LowerBoundLabel is the legend entry of the points that are lower bounds.
const LowerBoundLabel = "lower bound: some evaluation rollouts missed the horizon (true value higher)"

// entry is one legend entry.
type entry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// plot draws the panel's curves and reference lines; entries are its
// legend entries.
func (pn Panel) plot() (*plot.Plot, []entry, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
	p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(11), vg.Points(11)
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{pn.XTicks}, linearTicks{}
	// A log axis plots log10 y on a linear axis with logTicks: gonum's
	// LogScale centres the axis label's glyph box at the arithmetic mean of
	// the range, near the top, and shrinks the plot to make room for it.
	ty := func(y float64) float64 { return y }
	if pn.LogY {
		p.Y.Tick.Marker, ty = logTicks{}, math.Log10
	}
	// floor stands in for interval edges at or below 0 on a log axis.
	floor, x0, x1 := math.Inf(1), math.Inf(1), math.Inf(-1)
	for _, s := range pn.Series {
		for j, y := range s.Y {
			if finite(y) && (!pn.LogY || y > 0) {
				floor = math.Min(floor, math.Abs(y))
				x0, x1 = math.Min(x0, s.X[j]), math.Max(x1, s.X[j])
			}
		}
	}
	if pn.XMax > pn.XMin {
		x0, x1 = pn.XMin, pn.XMax
	}
	var entries []entry
	lower := false
	for i, s := range pn.Series {
		c := s.Color
		if c == nil {
			c = Color(i)
		}
		thumbs, low, err := addSeries(p, s, c, pn.LogY, floor, ty)
		if err != nil {
			return nil, nil, err
		}
		lower = lower || low
		if s.Name != "" && len(thumbs) > 0 {
			entries = append(entries, entry{s.Name, thumbs})
		}
	}
	if lower {
		entries = append(entries, entry{LowerBoundLabel, []plot.Thumbnailer{lowerGlyph(color.Black)}})
	}
	if x1 < x0 {
		x0, x1 = 0, 1
	}
	for i, th := range pn.Lines {
		if !(th.Y > 0) && pn.LogY || !finite(th.Y) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: ty(th.Y)}, {X: x1, Y: ty(th.Y)}})
		if err != nil {
			return nil, nil, err
		}
		l.Color, l.Dashes = lineColor(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		entries = append(entries, entry{th.Label, []plot.Thumbnailer{l}})
	}
	if pn.LogY && p.Y.Max > p.Y.Min {
		p.Y.Min, p.Y.Max = snapDown(p.Y.Min-math.Log10(1.15)), p.Y.Max+math.Log10(1.15)
	} else if p.Y.Max > p.Y.Min {
		d := (p.Y.Max - p.Y.Min) * 0.03
		p.Y.Min, p.Y.Max = p.Y.Min-d, p.Y.Max+d
	}
	if pn.YMax > pn.YMin {
		p.Y.Min, p.Y.Max = ty(pn.YMin), ty(pn.YMax)
	}
	if pn.XMax > pn.XMin {
		p.X.Min, p.X.Max = pn.XMin, pn.XMax
	}
	return p, entries, nil
}

// addSeries draws one curve at y = ty(Y): its line, its markers (a short
// curve), its intervals and its lower bounds; thumbs is its legend
// thumbnail, lower whether it has lower bounds.
func addSeries(p *plot.Plot, s Series, c color.Color, logY bool, floor float64, ty func(float64) float64) (thumbs []plot.Thumbnailer, lower bool, err error) {
	var pts, marks, lows, bars plotter.XYs
	var errs plotter.YErrors
	var bands []plotter.XYs // runs of consecutive intervals: upper edge, then lower edge reversed
	var upper, under plotter.XYs
	flush := func() {
		if len(upper) > 1 {
			bands = append(bands, append(upper, reversed(under)...))
		}
		upper, under = nil, nil
	}
	for j := range s.X {
		y := s.Y[j]
		if !finite(y) || logY && y <= 0 {
			continue
		}
		pt := plotter.XY{X: s.X[j], Y: ty(y)}
		pts = append(pts, pt)
		if j < len(s.Lower) && s.Lower[j] {
			lows = append(lows, pt)
			flush()
			continue
		}
		marks = append(marks, pt)
		if j >= len(s.Lo) || j >= len(s.Hi) || !finite(s.Lo[j]) || !finite(s.Hi[j]) {
			flush()
			continue
		}
		lo, hi := s.Lo[j], s.Hi[j]
		if logY && !(lo > 0) {
			lo = floor
		}
		lo, hi = ty(lo), ty(hi)
		bars = append(bars, pt)
		errs = append(errs, struct{ Low, High float64 }{pt.Y - lo, hi - pt.Y})
		upper, under = append(upper, plotter.XY{X: pt.X, Y: hi}), append(under, plotter.XY{X: pt.X, Y: lo})
	}
	flush()
	if len(pts) == 0 {
		return nil, false, nil
	}
	dense := len(pts) > denseAt
	if dense || s.Band {
		r, g, b, _ := c.RGBA()
		for _, poly := range bands {
			shade, err := plotter.NewPolygon(poly)
			if err != nil {
				return nil, false, err
			}
			shade.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 60}
			shade.LineStyle.Width = 0
			p.Add(shade)
		}
	} else if len(bars) > 0 {
		eb := &plotter.YErrorBars{XYs: bars, YErrors: errs, LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1)}, CapWidth: vg.Points(5)}
		p.Add(eb)
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, false, err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	switch {
	case s.Fit:
		l.Width, l.Dashes = vg.Points(1.2), []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	case s.Dashed:
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	thumbs = []plot.Thumbnailer{l}
	if !dense && !s.Fit && len(marks) > 0 {
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return nil, false, err
		}
		sc.Color, sc.Radius = c, vg.Points(2.5)
		p.Add(sc)
		thumbs = append(thumbs, sc)
	}
	if len(lows) > 0 {
		sc, err := plotter.NewScatter(lows)
		if err != nil {
			return nil, false, err
		}
		sc.GlyphStyle = lowerGlyph(c).GlyphStyle
		p.Add(sc)
	}
	return thumbs, len(lows) > 0, nil
}

// lowerGlyph marks a lower bound: a filled triangle, pointing up.
func lowerGlyph(c color.Color) *plotter.Scatter {
	return &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: c, Radius: vg.Points(4.5), Shape: draw.TriangleGlyph{}}}
}

func reversed(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i, p := range xy {
		out[len(xy)-1-i] = p
	}
	return out
}

// snapDown lowers the bottom of a log axis (log10 of its value) to the
// nearest 1, 2, 3 or 5 times a power of ten when that is within a factor
// 1.25, so that the axis starts at a label.
func snapDown(lo float64) float64 {
	e := math.Floor(lo)
	for _, m := range []float64{5, 3, 2, 1} {
		if v := e + math.Log10(m); v <= lo {
			if lo-v <= math.Log10(1.25) {
				return v
			}
			break
		}
	}
	return lo
}
