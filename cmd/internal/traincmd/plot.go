package traincmd

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
	"github.com/privtrain/privtrain/training"
)

// writePlot draws the run's curves per epoch into a PNG: accuracy (training and split,
// the evaluated split: "test", or "validation" with -validation), loss (training and split) and, for private training only, the ε spent against the
// target; one panel each so that each keeps its own scale, under a title with the
// run's settings.
func writePlot(path string, records []metricRecord, p training.Plan, title, split string, l nn.Loss) error {
	var trainAcc, testAcc, trainLoss, testLoss, eps plotter.XYs
	if len(records) > 0 && records[0].Epoch == 1 && p.Private {
		eps = append(eps, plotter.XY{}) // nothing is spent before the first step
	}
	maxEps := p.TargetEpsilon
	for _, r := range records {
		x := float64(r.Epoch)
		if r.TrainAccuracy != nil {
			trainAcc = append(trainAcc, plotter.XY{X: x, Y: 100 * *r.TrainAccuracy})
		}
		if r.TestAccuracy != nil {
			testAcc = append(testAcc, plotter.XY{X: x, Y: 100 * *r.TestAccuracy})
		}
		if r.Loss != nil {
			trainLoss = append(trainLoss, plotter.XY{X: x, Y: *r.Loss})
		}
		if r.TestLoss != nil {
			testLoss = append(testLoss, plotter.XY{X: x, Y: *r.TestLoss})
		}
		if r.Epsilon != nil {
			maxEps = max(maxEps, *r.Epsilon)
			eps = append(eps, plotter.XY{X: x, Y: *r.Epsilon})
		}
	}
	testColor, trainColor := color.RGBA{B: 200, A: 255}, color.RGBA{G: 140, A: 255}
	trainName := "training"
	if p.Private {
		trainName = "training (not covered by ε)"
	}
	acc := newPanel(title, "accuracy (%)")
	if err := addCurves(acc, []curve{{trainName, trainAcc, trainColor, true}, {split, testAcc, testColor, false}}); err != nil {
		return err
	}
	acc.Legend.Top, acc.Legend.Left = false, false
	loss := newPanel("Loss ("+l.Describe()+")", "loss")
	if err := addCurves(loss, []curve{{trainName, trainLoss, trainColor, true}, {split, testLoss, testColor, false}}); err != nil {
		return err
	}
	loss.Legend.Top = true
	panels := []*plot.Plot{acc, loss}
	if p.Private {
		privacy := newPanel(fmt.Sprintf("Privacy spent (δ = %g)", p.Delta), "ε")
		if err := addCurves(privacy, []curve{{"", eps, color.RGBA{R: 200, A: 255}, false}}); err != nil {
			return err
		}
		if p.TargetEpsilon > 0 {
			target, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.TargetEpsilon}, {X: float64(p.Epochs), Y: p.TargetEpsilon}})
			if err != nil {
				return err
			}
			target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			target.Color = color.Gray{Y: 120}
			privacy.Add(target)
			privacy.Legend.Add(fmt.Sprintf("target ε = %g", p.TargetEpsilon), target)
			privacy.Legend.Top, privacy.Legend.Left = false, false
		}
		privacy.Y.Min, privacy.Y.Max = 0, 1.1*maxEps
		panels = append(panels, privacy)
	}
	for _, pl := range panels {
		pl.X.Min = 0
		pl.X.Max = float64(max(p.Epochs, 1))
	}
	w, h := 16*vg.Centimeter, vg.Length(len(panels))*8*vg.Centimeter+vg.Centimeter
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	grid := make([][]*plot.Plot, len(panels))
	for i, pl := range panels {
		grid[i] = []*plot.Plot{pl}
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, pl := range panels {
		pl.Draw(canvases[i][0])
	}
	return atomicfile.Write(path, 0o644, func(f io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	})
}

// plotTitle names the run in the plot: model, optimizer and its settings, data, privacy.
func plotTitle(o *options, t *training.Trainer, dataName string) string {
	p := t.Plan()
	priv := "not private (ε = ∞)"
	if p.Private {
		priv = fmt.Sprintf("z = %.4g, clip %s, plan ε = %.3g at δ = %g", p.NoiseMultiplier, p.ClipRule, p.Spent.Epsilon, p.Delta)
		if p.TargetEpsilon > 0 {
			priv = fmt.Sprintf("target ε = %g, ", p.TargetEpsilon) + priv
		}
	}
	return fmt.Sprintf("%s, %s, %s, batch %d, %d epochs on %s\n%s",
		t.Model().Name(), t.Optimizer().Name(), lrString(o), p.BatchSize, p.Epochs, dataName, priv)
}

func newPanel(title, yLabel string) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = title
	pl.Y.Label.Text = yLabel
	pl.X.Label.Text = "epoch"
	pl.Add(plotter.NewGrid())
	return pl
}

type curve struct {
	name   string
	xys    plotter.XYs
	color  color.Color
	dashed bool
}

func addCurves(pl *plot.Plot, curves []curve) error {
	for _, c := range curves {
		if len(c.xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(c.xys)
		if err != nil {
			return err
		}
		line.Color, points.Color = c.color, c.color
		line.Width = vg.Points(1.5)
		if c.dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		pl.Add(line, points)
		if c.name != "" {
			pl.Legend.Add(c.name, line, points)
		}
	}
	return nil
}
