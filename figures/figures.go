// Package figures draws the project's PNG figures with gonum/plot: curves
// against training steps or sizes, theory lines, the a/b/c/d grid of
// Figure 4. It knows no training: callers hand it numbers.
package figures

import (
	"image/color"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one named curve.
type Series struct {
	Name string
	X, Y []float64
}

// Lines draws named curves with a title, axis labels, a legend (top left,
// or top right when legendLeft is false) and, when logY is set, a
// log-scale y axis (points at y <= 0 are left out). Curves whose name
// starts with RLVR are dashed.
func Lines(path, title, xlabel, ylabel string, logY, legendLeft bool, lines []Series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range lines {
		xy := make(plotter.XYs, 0, len(s.X))
		for j := range s.X {
			if !logY || s.Y[j] > 0 {
				xy = append(xy, plotter.XY{X: s.X[j], Y: s.Y[j]})
			}
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		c := Color(i)
		l.Color, pts.Color, l.Width = c, c, vg.Points(1.5)
		if strings.HasPrefix(s.Name, "RLVR") || strings.HasPrefix(s.Name, "rlvr") {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	p.Legend.Top, p.Legend.Left = true, legendLeft
	return p.Save(8*vg.Inch, 5.5*vg.Inch, path)
}

// Color spreads curves over a fixed palette.
func Color(i int) color.Color {
	palette := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
	return palette[i%len(palette)]
}

// hline is a dashed horizontal theory line across the x range.
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

// savePNG writes a canvas as a PNG file.
func savePNG(path string, img *vgimg.Canvas) error {
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

// grid draws plots in rows and columns under a title.
func grid(path, title string, plots [][]*plot.Plot, w, h vg.Length) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(14)), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter},
		vg.Point{X: w / 2, Y: h - 16}, title)
	body := draw.Crop(dc, 0, 0, 0, -28)
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	return savePNG(path, img)
}
