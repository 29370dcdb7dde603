package figures

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// labelled returns the labelled ticks' values and labels.
func labelled(ts []plot.Tick) (vals []float64, labels []string) {
	for _, t := range ts {
		if t.Label != "" {
			vals, labels = append(vals, t.Value), append(labels, t.Label)
		}
	}
	return vals, labels
}

// TestTicks: every axis range gets at least 3 and at most maxLabels
// labels (maxDecadeLabels of powers of ten), inside the range, each reading back as its own value, all in one
// format (plain, or all m e n when a value reaches 10^7).
func TestTicks(t *testing.T) {
	for _, c := range []struct {
		name   string
		ticker plot.Ticker // logTicks take log10 of the range, give log10 values
		lo, hi float64
		sci    bool
		want   []string // nil: not checked
	}{
		{"log within a decade", logTicks{}, 30, 40, false, []string{"30", "32", "34", "36", "38", "40"}},
		{"log, fig8's range", logTicks{}, 26, 420, false, []string{"30", "50", "100", "200", "300"}},
		{"log, fig5-partial's range", logTicks{}, 100, 1e6, false, []string{"100", "1000", "10000", "100000", "1000000"}},
		{"log, thm4's range", logTicks{}, 25, 5e11, true, []string{"1e2", "1e3", "1e4", "1e5", "1e6", "1e7", "1e8", "1e9", "1e10", "1e11"}},
		{"log, 20 decades", logTicks{}, 1, 1e20, true, []string{"1e0", "1e2", "1e4", "1e6", "1e8", "1e10", "1e12", "1e14", "1e16", "1e18", "1e20"}},
		{"log, thm1's range", logTicks{}, 0.003, 1.2, false, []string{"0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}},
		{"linear steps", linearTicks{}, -1e-9, 560, false, []string{"0", "100", "200", "300", "400", "500"}},
		{"linear, few", linearTicks{4}, 0, 1600, false, []string{"0", "500", "1000", "1500"}},
		{"linear probability", linearTicks{}, 0, 1.02, false, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ts []plot.Tick
			if _, ok := c.ticker.(logTicks); ok {
				ts = c.ticker.Ticks(math.Log10(c.lo), math.Log10(c.hi))
				for i := range ts {
					ts[i].Value = math.Pow(10, ts[i].Value)
				}
			} else {
				ts = c.ticker.Ticks(c.lo, c.hi)
			}
			vals, labels := labelled(ts)
			if len(labels) < 3 || len(labels) > maxDecadeLabels {
				t.Fatalf("got %d labels %q, want 3 to %d", len(labels), labels, maxDecadeLabels)
			}
			if c.want != nil && strings.Join(labels, " ") != strings.Join(c.want, " ") {
				t.Errorf("got labels %q, want %q", labels, c.want)
			}
			for i, l := range labels {
				v, err := strconv.ParseFloat(l, 64)
				if err != nil || math.Abs(v-vals[i]) > 1e-9*math.Abs(vals[i]) {
					t.Errorf("label %q reads %v, want its tick %v", l, v, vals[i])
				}
				if vals[i] < c.lo*(1-1e-9) || vals[i] > c.hi*(1+1e-9) {
					t.Errorf("tick %v outside [%v, %v]", vals[i], c.lo, c.hi)
				}
				if strings.Contains(l, "e") != c.sci || strings.Contains(l, "+") || l == "-0" {
					t.Errorf("label %q: want scientific %v, no '+', no -0 (labels %q)", l, c.sci, labels)
				}
			}
		})
	}
}

// TestLayoutHoldsLegend: however long the legend's entries, the canvas
// holds the title, the panels and, right of them, the whole legend.
func TestLayoutHoldsLegend(t *testing.T) {
	long := strings.Repeat("a long legend entry ", 6)
	f := Figure{Title: "title", Panels: []Panel{{LogY: true,
		Series: []Series{{Name: long, X: []float64{0, 1}, Y: []float64{10, 100}}, {Name: "short", X: []float64{0, 1}, Y: []float64{20, 30}}},
		Lines:  []Theory{{Y: 50, Label: "line"}}}}}
	plots, leg, err := f.build()
	if err != nil {
		t.Fatal(err)
	}
	lay := f.layout(&leg, len(plots), len(plots[0]))
	size := leg.Rectangle(draw.Canvas{}).Size()
	inside := func(r vg.Rectangle) bool {
		return r.Min.X >= 0 && r.Min.Y >= 0 && r.Max.X <= lay.Canvas.Max.X && r.Max.Y <= lay.Canvas.Max.Y
	}
	if !inside(lay.Legend) || !inside(lay.Panels) {
		t.Errorf("legend %v or panels %v outside the canvas %v", lay.Legend, lay.Panels, lay.Canvas)
	}
	if lay.Legend.Size().X < size.X-1e-6 || lay.Legend.Size().Y < size.Y-1e-6 {
		t.Errorf("legend box %v smaller than the legend %v", lay.Legend.Size(), size)
	}
	if lay.Legend.Min.X < lay.Panels.Max.X {
		t.Errorf("legend from x = %v overlaps the panels to %v", lay.Legend.Min.X, lay.Panels.Max.X)
	}
	path := filepath.Join(t.TempDir(), "f.png")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	img, err := png.Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); math.Abs(float64(w)-lay.Canvas.Max.X.Dots(96)) > 1 {
		t.Errorf("PNG %d pixels wide, want the layout's %v", w, lay.Canvas.Max.X.Dots(96))
	}
}

// TestLowerBounds: a point marked as a lower bound gets the lower-bound
// legend entry, drawn with the triangle; a curve without one does not.
func TestLowerBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		lower []bool
		want  bool
	}{{"exact", nil, false}, {"one lower bound", []bool{false, true, false}, true}} {
		t.Run(c.name, func(t *testing.T) {
			pn := Panel{LogY: true, Series: []Series{{Name: "h", X: []float64{0, 1, 2}, Y: []float64{100, 7397, 50},
				Lo: []float64{90, math.NaN(), 45}, Hi: []float64{110, math.NaN(), 55}, Lower: c.lower}}}
			_, entries, err := pn.plot()
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, e := range entries {
				if e.name == LowerBoundLabel {
					got = true
					if sc, ok := e.thumbs[0].(*plotter.Scatter); !ok || sc.Shape != (draw.TriangleGlyph{}) {
						t.Errorf("lower-bound entry drawn with %#v, want a triangle", e.thumbs[0])
					}
				}
			}
			if got != c.want {
				t.Errorf("got a lower-bound legend entry %v, want %v", got, c.want)
			}
		})
	}
}

// TestDepthSpread: the largest difference between depths at one step, by
// hand; spread keeps 1 and K.
func TestDepthSpread(t *testing.T) {
	nan := math.NaN()
	rows := [][]float64{
		{0, 1, 0.5, 0.9, 0.8, 0.1},
		{0, 2, 0.7, 0.9, 0.8, nan},
		{10, 1, 0.9, 0.95, 0.8, 0.2},
		{10, 2, 0.95, 0.9, 0.8, 0.6},
	}
	got := depthSpread(rows)
	want := [4]float64{0.2, 0.05, 0, 0.4}
	for q := range want {
		if math.Abs(got[q]-want[q]) > 1e-12 {
			t.Errorf("%c: got %v, want %v", 'a'+q, got[q], want[q])
		}
	}
	if s := spread(40, 15); len(s) != 15 || s[0] != 1 || s[14] != 40 {
		t.Errorf("spread(40, 15) = %v, want 15 depths from 1 to 40", s)
	}
	if s := spread(6, 15); len(s) != 6 || s[5] != 6 {
		t.Errorf("spread(6, 15) = %v, want 1..6", s)
	}
}

// TestLogPanelKeepsItsHeight: a log axis over eleven decades with a long
// label keeps most of the panel's height for the data (gonum's LogScale
// gave a quarter of it to the label's misplaced glyph box).
func TestLogPanelKeepsItsHeight(t *testing.T) {
	pn := Panel{XLabel: "depth K", YLabel: "exact hitting time H_f (transitions, log scale)", LogY: true,
		Series: []Series{{Name: "h", X: []float64{1, 12}, Y: []float64{60, 4e11}}}}
	p, _, err := pn.plot()
	if err != nil {
		t.Fatal(err)
	}
	c := draw.New(vgimg.New(7*vg.Inch, 5*vg.Inch))
	if got, want := p.DataCanvas(c).Size().Y, 0.85*c.Size().Y; got < want {
		t.Errorf("data height %v of %v, want at least %v", got, c.Size().Y, want)
	}
}
