// Package figures draws the project's PNG figures with gonum/plot: curves
// against training steps or sizes with their 95% intervals, lower bounds
// marked, theory lines, the per-depth a/b/c/d panels of Figure 4. It
// knows no training: callers hand it numbers.
package figures

import (
	"image/color"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one curve of measured or computed points.
type Series struct {
	Name string // its legend entry ("": none)
	X, Y []float64
	// Lo and Hi, when set, bound each point's 95% interval (NaN: none),
	// drawn as error bars, or as a shaded band on a curve of more than
	// denseAt points or when Band is set.
	Lo, Hi []float64
	Band   bool
	// Lower marks the points that are only lower bounds of the value (a
	// Monte Carlo estimate some of whose rollouts missed the horizon):
	// drawn as triangles, with a legend entry of their own.
	Lower []bool
	// Dashed draws the curve dashed (a limit policy, a second setting).
	Dashed bool
	// Fit draws a fitted or theoretical curve: thin, dotted, no markers.
	Fit bool
	// Color is the curve's colour (nil: the palette's, by position).
	Color color.Color
}

// Theory is a dashed horizontal reference line (Y <= 0: none).
type Theory struct {
	Y     float64
	Label string
}

// Panel is one plot of a figure.
type Panel struct {
	Title, XLabel, YLabel string
	LogY                  bool
	// YMin and YMax, when YMax > YMin, fix the y range (a zoom); XMin and
	// XMax likewise the x range.
	YMin, YMax, XMin, XMax float64
	// XTicks is the most labels on the x axis (0: 8; fewer on a narrow panel).
	XTicks int
	Series []Series
	Lines  []Theory
}

// Figure is one PNG: panels in rows of Cols under a title, with one
// legend to the right of them, inside the canvas.
type Figure struct {
	Title string
	// Cols is the number of panels per row (0: all in one row).
	Cols int
	// PanelW and PanelH are each panel's size (0: 7 by 5 inches).
	PanelW, PanelH vg.Length
	Panels         []Panel
}

// pad is the space around the legend.
const pad = 3 * vg.Millimeter

// titleStyle is the style of a figure's title.
var titleStyle = draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(14)), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}

// titleHeight is the room for a title of one or more lines.
func titleHeight(title string) vg.Length {
	return vg.Points(float64(10 + 18*(strings.Count(title, "\n")+1)))
}

// Save draws the figure into a PNG file.
func (f Figure) Save(path string) error {
	plots, leg, err := f.build()
	if err != nil {
		return err
	}
	lay := f.layout(&leg, len(plots), len(plots[0]))
	img := vgimg.New(lay.Canvas.Max.X, lay.Canvas.Max.Y)
	dc := draw.New(img)
	dc.FillText(titleStyle, vg.Point{X: lay.Canvas.Max.X / 2, Y: lay.Canvas.Max.Y - 4}, f.Title)
	body := draw.Canvas{Canvas: dc.Canvas, Rectangle: lay.Panels}
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: pad, PadY: pad, PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	leg.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: lay.Legend})
	return savePNG(path, img)
}

// layout is where a figure's parts go on its canvas.
type layout struct {
	Canvas, Panels, Legend vg.Rectangle
}

// layout sizes the canvas to hold the title, rows by cols panels and,
// right of them, the whole legend below the title.
func (f Figure) layout(leg *plot.Legend, rows, cols int) layout {
	w, h := f.PanelW, f.PanelH
	if w == 0 || h == 0 {
		w, h = 7*vg.Inch, 5*vg.Inch
	}
	size := leg.Rectangle(draw.Canvas{}).Size()
	panelsW, panelsH := vg.Length(cols)*w, vg.Length(rows)*h
	legW := size.X + 2*pad
	if size.X == 0 {
		legW = 0
	}
	titleH := titleHeight(f.Title)
	height := max(panelsH, size.Y+2*pad) + titleH
	var l layout
	l.Canvas.Max = vg.Point{X: max(panelsW+legW, titleStyle.Rectangle(f.Title).Size().X+2*pad), Y: height}
	l.Panels.Max = vg.Point{X: panelsW, Y: height - titleH}
	l.Legend = vg.Rectangle{Min: vg.Point{X: panelsW + pad, Y: height - titleH - pad - size.Y}, Max: vg.Point{X: panelsW + pad + size.X, Y: height - titleH - pad}}
	return l
}

// build makes the panels' plots, in rows of f.Cols, and the legend: each
// name once, in the order met.
func (f Figure) build() ([][]*plot.Plot, plot.Legend, error) {
	cols := f.Cols
	if cols <= 0 || cols > len(f.Panels) {
		cols = len(f.Panels)
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(11)
	seen := map[string]bool{}
	var plots [][]*plot.Plot
	for i, pn := range f.Panels {
		p, entries, err := pn.plot()
		if err != nil {
			return nil, leg, err
		}
		if i%cols == 0 {
			plots = append(plots, make([]*plot.Plot, cols))
		}
		plots[i/cols][i%cols] = p
		for _, e := range entries {
			if !seen[e.name] {
				seen[e.name] = true
				leg.Add(e.name, e.thumbs...)
			}
		}
	}
	if len(plots) == 0 {
		plots = [][]*plot.Plot{{plot.New()}}
	}
	return plots, leg, nil
}

// Color spreads curves over a fixed palette.
func Color(i int) color.Color {
	palette := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
	return palette[i%len(palette)]
}

// lineColor is the colour and dash pattern of reference line i: dark
// colours apart from the curves' palette.
func lineColor(i int) (color.Color, []vg.Length) {
	colors := []color.RGBA{{0, 0, 0, 255}, {160, 30, 30, 255}, {20, 110, 60, 255}, {110, 40, 150, 255}, {150, 110, 0, 255}, {0, 100, 140, 255}}
	dashes := [][]vg.Length{{vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}
	return colors[i%len(colors)], dashes[i%len(dashes)]
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

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
