package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writePlots draws hitting_time.png (Figure 3) and abcd.png (Figure 4) from
// the run folder's CSV files.
func writePlots(dir string, s summary) error {
	m, err := readCSV(filepath.Join(dir, "metrics.csv"))
	if err != nil {
		return err
	}
	if s.Trainer == "pretrain" {
		return plotInvalidMass(filepath.Join(dir, "invalid_mass.png"), m, s)
	}
	if err := plotHitting(filepath.Join(dir, "hitting_time.png"), m, s); err != nil {
		return err
	}
	a, err := readCSV(filepath.Join(dir, "abcd.csv"))
	if err != nil {
		return err
	}
	return plotABCD(filepath.Join(dir, "abcd.png"), a, s)
}

// readCSV reads a numeric CSV with a header line.
func readCSV(path string) ([][]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows [][]float64
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i == 0 || line == "" {
			continue
		}
		var rec []float64
		for _, f := range strings.Split(line, ",") {
			v := math.NaN() // an empty cell does not apply
			if f != "" {
				var err error
				if v, err = strconv.ParseFloat(f, 64); err != nil {
					return nil, fmt.Errorf("%s line %d: %v", path, i+1, err)
				}
			}
			rec = append(rec, v)
		}
		rows = append(rows, rec)
	}
	return rows, nil
}

// hline is a horizontal theory line across the x range.
func hline(p *plot.Plot, y, x0, x1 float64, label string, c color.Color) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	l.Color, l.Dashes = c, []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

func plotHitting(path string, rows [][]float64, s summary) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Hitting time under %s training, graph %s", s.Trainer, s.Graph)
	p.X.Label.Text = "training step"
	p.X.Tick.Marker = stepTicks{}
	p.Y.Label.Text = "expected hitting time H_f (transitions, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	xy := make(plotter.XYs, 0, len(rows))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if r[1] > 0 && !math.IsInf(r[1], 0) {
			xy = append(xy, plotter.XY{X: r[0], Y: r[1]})
			lo, hi = math.Min(lo, r[1]), math.Max(hi, r[1])
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
	p.Legend.Add("exact hitting time", line)
	x0, x1 := xy[0].X, xy[len(xy)-1].X
	if x1 == x0 {
		x1 = x0 + 1
	}
	if s.Theory.H0 > 0 {
		if err := hline(p, s.Theory.H0, x0, x1, "H_0 = "+num(s.Theory.H0)+" (pretrained, Appendix B)", color.RGBA{R: 214, G: 39, B: 40, A: 255}); err != nil {
			return err
		}
		hi = math.Max(hi, s.Theory.H0)
	}
	if lim := val(s.LimitHittingTime); lim > 0 {
		label := "limit " + num(lim) + " (converged backtracking; 4 sum k = " + num(s.Theory.RLVRLeading) + ")"
		if s.Trainer == "sft" {
			label = "SFT limit " + num(lim)
		}
		if err := hline(p, lim, x0, x1, label, color.RGBA{R: 44, G: 160, B: 44, A: 255}); err != nil {
			return err
		}
		lo = math.Min(lo, lim)
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

func plotABCD(path string, rows [][]float64, s summary) error {
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
				if int(r[1]) == j {
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
	const w, h = 10 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	title := fmt.Sprintf("a, b, c, d per depth under %s training, graph %s (every depth overlaid)", s.Trainer, s.Graph)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(14)), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter},
		vg.Point{X: w / 2, Y: h - 16}, title)
	body := draw.Crop(dc, 0, 0, 0, -28)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(plots, tiles, body)
	for i := range 2 {
		for j := range 2 {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stepTicks labels training steps as integers.
type stepTicks struct{}

func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// plotInvalidMass draws Theorem 1: the largest mass a state puts on invalid
// transitions, and its ratio to the bound n_s/(m_s + t), against steps.
func plotInvalidMass(path string, rows [][]float64, s summary) error {
	p := plot.New()
	p.Title.Text = "Pretraining from zero logits learns the world model's mask (Theorem 1), graph " + s.Graph
	p.X.Label.Text = "training step"
	p.X.Tick.Marker = stepTicks{}
	p.Y.Label.Text = "max over states (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, c := range []struct {
		col   int
		label string
		color color.Color
	}{{7, "mass on invalid transitions 1 - p_s(t)", color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{8, "ratio to the bound n_s/(m_s + t) (<= 1)", color.RGBA{R: 214, G: 39, B: 40, A: 255}}} {
		var xy plotter.XYs
		for _, r := range rows {
			if len(r) > c.col && r[c.col] > 0 {
				xy = append(xy, plotter.XY{X: r[0], Y: r[c.col]})
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

// series is one named curve.
type series struct {
	name string
	x, y []float64
}

// plotLines draws named curves with a title, axis labels, a legend (top
// left) and, when logY is set, a log-scale y axis.
func plotLines(path, title, xlabel, ylabel string, logY bool, lines []series) error {
	return plotLinesLegend(path, title, xlabel, ylabel, logY, true, lines)
}

// plotLinesLegend is plotLines with the legend top left or top right.
func plotLinesLegend(path, title, xlabel, ylabel string, logY, legendLeft bool, lines []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range lines {
		xy := make(plotter.XYs, 0, len(s.x))
		for j := range s.x {
			if !logY || s.y[j] > 0 {
				xy = append(xy, plotter.XY{X: s.x[j], Y: s.y[j]})
			}
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		c := plotutilColor(i, len(lines))
		l.Color, pts.Color, l.Width = c, c, vg.Points(1.5)
		if strings.HasPrefix(s.name, "RLVR") || strings.HasPrefix(s.name, "rlvr") {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	p.Legend.Top, p.Legend.Left = true, legendLeft
	return p.Save(8*vg.Inch, 5.5*vg.Inch, path)
}

// plotutilColor spreads n curves over a fixed palette.
func plotutilColor(i, n int) color.Color {
	palette := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
	return palette[i%len(palette)]
}
