package figures

// Band is a curve with an interval around it: a mean over seeds and its
// 95% interval, say.
type Band struct {
	Name            string
	X, Mean, Lo, Hi []float64
}

// Bands draws curves with their intervals as shaded bands and dashed
// horizontal lines, with a legend. With
// logY, points whose mean is not positive are left out and a lower edge
// at or below 0 is drawn at the smallest positive value shown. Nothing
// is written when no point remains.
func Bands(path, title, xlabel, ylabel string, logY bool, bands []Band, lines []Theory) error {
	pn := Panel{XLabel: xlabel, YLabel: ylabel, LogY: logY, Lines: lines}
	shown := false
	for _, b := range bands {
		pn.Series = append(pn.Series, Series{Name: b.Name, X: b.X, Y: b.Mean, Lo: b.Lo, Hi: b.Hi, Band: true})
		for _, m := range b.Mean {
			shown = shown || finite(m) && (!logY || m > 0)
		}
	}
	if !shown {
		return nil
	}
	return Figure{Title: title, Panels: []Panel{pn}}.Save(path)
}
