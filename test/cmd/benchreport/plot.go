package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	mcpkitColor = color.RGBA{R: 0x2b, G: 0x6c, B: 0xb0, A: 0xff}
	peerColor   = color.RGBA{R: 0x9a, G: 0x9a, B: 0x9a, A: 0xff}
	slowerColor = color.RGBA{R: 0xe0, G: 0x8a, B: 0x2c, A: 0xff}
	targetColor = color.RGBA{R: 0xd0, G: 0x20, B: 0x20, A: 0xff}
)

const (
	plotWidth = 7 * vg.Inch
	rowHeight = 0.32 * vg.Inch
)

// DrawPlots draws each area's PNGs into dir (a ratio chart when a row has
// a ratio, a latency chart when a row has quantiles) and records them in
// a.Plots.
func DrawPlots(areas []AreaFigures, dir string) error {
	for i := range areas {
		a := &areas[i]
		a.Plots = nil
		for _, d := range []struct {
			prefix, alt string
			draw        func(*AreaFigures) (*plot.Plot, float64, error)
		}{
			{"ratios-", "speed against the peer", ratioPlot},
			{"latency-", "latency quantiles", latencyPlot},
		} {
			p, rows, err := d.draw(a)
			if err != nil {
				return fmt.Errorf("plot %s%s: %w", d.prefix, a.ID, err)
			}
			if p == nil {
				continue
			}
			file := d.prefix + a.ID + ".png"
			if err := save(p, rows, filepath.Join(dir, file)); err != nil {
				return fmt.Errorf("save %s: %w", file, err)
			}
			a.Plots = append(a.Plots, Plot{File: file, Alt: a.Title + ": " + d.alt})
		}
	}
	return nil
}

// save writes p as a PNG sized for rows rows, with a margin on every side
// (gonum/plot measures tick labels a little short).
func save(p *plot.Plot, rows float64, path string) error {
	c := vgimg.New(plotWidth, vg.Length(rows)*rowHeight+1.2*vg.Inch)
	margin := vg.Points(8)
	p.Draw(draw.Crop(draw.New(c), margin, -margin, 0, -margin/2))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ratioPlot draws a bar per row with a ratio: how many times faster
// mcpkit is than its peer, on a log scale from parity (1×), so that twice
// as fast and twice as slow are bars of one length either side; each
// ratio target is a red mark. It returns nil when no row has a ratio.
func ratioPlot(a *AreaFigures) (*plot.Plot, float64, error) {
	type bar struct {
		name          string
		speed, target float64
	}
	var bars []bar
	for _, f := range a.Rows {
		s, ok := f.Speed()
		if !ok {
			continue
		}
		b := bar{name: f.Row.Name, speed: s}
		for _, v := range f.Verdicts {
			if v.Speed > 0 {
				b.target = v.Speed
			}
		}
		bars = append(bars, b)
	}
	if len(bars) == 0 {
		return nil, 0, nil
	}
	slices.Reverse(bars) // the first row on top
	p := plot.New()
	p.Title.Text = a.Title + ": speed against the peer"
	p.X.Label.Text = "times as fast as the peer, log scale (right of 1: faster)"
	p.X.Scale = plot.LogScale{}
	names := make([]string, len(bars))
	labels := &plotter.XYLabels{}
	lo, hi := 1.0, 1.0
	legend := map[string]bool{}
	for i, b := range bars {
		names[i] = b.name
		y := float64(i)
		lo, hi = min(lo, b.speed), max(hi, b.speed)
		if b.target > 0 {
			lo, hi = min(lo, b.target), max(hi, b.target)
		}
		line, err := plotter.NewLine(plotter.XYs{{X: 1, Y: y}, {X: b.speed, Y: y}})
		if err != nil {
			return nil, 0, err
		}
		line.Width, line.Color = rowHeight*0.55, mcpkitColor
		label := "faster than the peer"
		if b.speed < 1 {
			line.Color, label = slowerColor, "slower than the peer"
		}
		p.Add(line)
		if !legend[label] {
			p.Legend.Add(label, line)
			legend[label] = true
		}
		at := max(b.speed, 1) // the label right of the bar and of parity
		if b.target > 0 {
			mark, err := plotter.NewLine(plotter.XYs{{X: b.target, Y: y - 0.4}, {X: b.target, Y: y + 0.4}})
			if err != nil {
				return nil, 0, err
			}
			mark.Color, mark.Width = targetColor, vg.Points(2.5)
			p.Add(mark)
			if !legend["target"] {
				p.Legend.Add("target (at least)", mark)
				legend["target"] = true
			}
			at = max(at, b.target)
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: at, Y: y})
		labels.Labels = append(labels.Labels, " "+strconv.FormatFloat(b.speed, 'g', 3, 64)+"×")
	}
	parity, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: float64(len(bars)) - 0.5}})
	if err != nil {
		return nil, 0, err
	}
	parity.Color = peerColor
	parity.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(parity)
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, 0, err
	}
	p.Add(l)
	p.NominalY(names...)
	p.X.Min, p.X.Max = lo/1.6, hi*2.5 // room for the labels
	p.X.Tick.Marker = logTicks(p.X.Min, p.X.Max)
	// Headroom for the legend's lines, two to a row.
	headroom := math.Ceil(float64(len(legend)) / 2)
	p.Y.Min, p.Y.Max = -0.6, float64(len(bars))-0.4+headroom
	p.Legend.Top = true
	return p, float64(len(bars)) + headroom, nil
}

// logTicks marks a log axis from lo to hi: at powers of ten when it spans
// more than one, else as a linear axis would (a power of ten or none
// would be the only mark).
func logTicks(lo, hi float64) plot.Ticker {
	if hi/lo > 20 {
		return plot.LogTicks{Prec: -1}
	}
	return plot.DefaultTicks{}
}

// latencyPlot draws, per row with quantiles, each side's quantiles on a
// log scale joined by a line (p50 a circle, the tail a triangle). It
// returns nil when no row has quantiles.
func latencyPlot(a *AreaFigures) (*plot.Plot, float64, error) {
	var rows []Figures
	for _, f := range a.Rows {
		if len(f.Quantiles) > 0 {
			rows = append(rows, f)
		}
	}
	if len(rows) == 0 {
		return nil, 0, nil
	}
	slices.Reverse(rows)
	p := plot.New()
	p.Title.Text = a.Title + ": latency"
	p.X.Label.Text = "µs, log scale (lower is better)"
	p.X.Scale = plot.LogScale{}
	names := make([]string, len(rows))
	legend := map[string]bool{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, f := range rows {
		names[i] = f.Row.Name
		for _, side := range []struct {
			name  string
			dy    float64
			color color.Color
			value func(QuantileValue) float64
		}{
			{"mcpkit", 0.15, mcpkitColor, func(q QuantileValue) float64 { return q.Mine }},
			{"peer", -0.15, peerColor, func(q QuantileValue) float64 { return q.Peer }},
		} {
			var median, tail plotter.XYs
			for _, q := range f.Quantiles {
				v := side.value(q) * 1e6
				if math.IsNaN(v) || v <= 0 {
					continue
				}
				lo, hi = min(lo, v), max(hi, v)
				xy := plotter.XY{X: v, Y: float64(i) + side.dy}
				if q.Q == "p50" {
					median = append(median, xy)
				} else {
					tail = append(tail, xy)
				}
			}
			if all := append(slices.Clone(median), tail...); len(all) > 1 {
				line, err := plotter.NewLine(all)
				if err != nil {
					return nil, 0, err
				}
				line.Color = side.color
				p.Add(line)
			}
			for _, g := range []struct {
				xys   plotter.XYs
				shape draw.GlyphDrawer
				label string
			}{{median, draw.CircleGlyph{}, side.name + " p50"}, {tail, draw.TriangleGlyph{}, side.name + " p95/p99"}} {
				if len(g.xys) == 0 {
					continue
				}
				s, err := plotter.NewScatter(g.xys)
				if err != nil {
					return nil, 0, err
				}
				s.GlyphStyle = draw.GlyphStyle{Color: side.color, Radius: vg.Points(3.5), Shape: g.shape}
				p.Add(s)
				if !legend[g.label] {
					p.Legend.Add(g.label, s)
					legend[g.label] = true
				}
			}
		}
	}
	p.NominalY(names...)
	// Headroom for the legend's lines, two to a row.
	headroom := math.Ceil(float64(len(legend)) / 2)
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4+headroom
	p.X.Min, p.X.Max = lo/1.5, hi*1.5
	p.X.Tick.Marker = logTicks(p.X.Min, p.X.Max)
	p.Legend.Top = true
	return p, float64(len(rows)) + headroom, nil
}
