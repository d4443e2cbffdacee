package main

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/nn"
)

// writePlot draws test accuracy (top) and ε spent (bottom) per epoch into a PNG, one
// panel each so that both keep their own scale.
func writePlot(path string, records []metricRecord, p nn.Plan) error {
	var acc, eps plotter.XYs
	if len(records) > 0 && records[0].Epoch == 1 && p.Private {
		eps = append(eps, plotter.XY{}) // nothing is spent before the first step
	}
	maxEps := p.TargetEpsilon
	for _, r := range records {
		if r.Epsilon != nil {
			maxEps = max(maxEps, *r.Epsilon)
		}
		if r.TestAccuracy != nil {
			acc = append(acc, plotter.XY{X: float64(r.Epoch), Y: 100 * *r.TestAccuracy})
		}
		if r.Epsilon != nil {
			eps = append(eps, plotter.XY{X: float64(r.Epoch), Y: *r.Epsilon})
		}
	}
	top := plot.New()
	top.Title.Text = "Test accuracy"
	top.Y.Label.Text = "accuracy (%)"
	top.X.Label.Text = "epoch"
	top.Add(plotter.NewGrid())
	if err := addLine(top, acc, color.RGBA{B: 200, A: 255}); err != nil {
		return err
	}
	bottom := plot.New()
	bottom.X.Label.Text = "epoch"
	bottom.Y.Label.Text = "ε"
	bottom.Add(plotter.NewGrid())
	if p.Private {
		bottom.Title.Text = fmt.Sprintf("Privacy spent (δ = %g)", p.Delta)
		if err := addLine(bottom, eps, color.RGBA{R: 200, A: 255}); err != nil {
			return err
		}
		if p.TargetEpsilon > 0 {
			target, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.TargetEpsilon}, {X: float64(p.Epochs), Y: p.TargetEpsilon}})
			if err != nil {
				return err
			}
			target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			target.Color = color.Gray{Y: 120}
			bottom.Add(target)
			bottom.Legend.Add(fmt.Sprintf("target ε = %g", p.TargetEpsilon), target)
			bottom.Legend.Top, bottom.Legend.Left = false, false
		}
		bottom.Y.Min, bottom.Y.Max = 0, 1.1*maxEps
	} else {
		bottom.Title.Text = "Privacy spent: ε = ∞ (non-private optimizer)"
	}
	for _, pl := range []*plot.Plot{top, bottom} {
		pl.X.Min = 0
		pl.X.Max = float64(max(p.Epochs, 1))
	}
	const w, h = 16 * vg.Centimeter, 18 * vg.Centimeter
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	return atomicfile.Write(path, 0o644, func(f io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	})
}

func addLine(p *plot.Plot, xys plotter.XYs, c color.Color) error {
	if len(xys) == 0 {
		return nil
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color, points.Color = c, c
	line.Width = vg.Points(1.5)
	p.Add(line, points)
	return nil
}
