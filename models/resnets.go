package models

import (
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// The residual networks (issue 27): the architectures behind the CIFAR-10 records of
// private training from the data alone, built of layers.Residual blocks, GroupNorm (no
// statistic mixes examples, so per-example clipping holds) and, in De et al.'s network,
// weight-standardised convolutions.

func wsConv(f, k, stride, pad int) layers.Layer {
	return layers.WSConv2D{Filters: f, Kernel: [2]int{k, k}, Stride: [2]int{stride, stride}, Padding: [2]int{pad, pad}, Init: layers.HeNormal{}}
}

// WRN164 is De et al.'s WRN-16-4 ("Unlocking High-Accuracy Differentially Private Image
// Classification through Scale", 2022: 81.4 % on CIFAR-10 at ε = 8 with augmentation
// multiplicity), the wide residual network of depth 16 and width 4 in their JAX code's
// form, on 3×32×32 images, 2,751,146 parameters:
//
//	ws-conv 16 3×3                                        → 16×32×32
//	3 groups of 2 pre-activation blocks, widths 64, 128, 256, strides 1, 2, 2:
//	  first block:  GN, ReLU, then  body: ws-conv 3×3 (stride), GN, ReLU, ws-conv 3×3
//	                                shortcut: ws-conv 1×1 (stride)        (projection)
//	  second block: body: GN, ReLU, ws-conv 3×3, GN, ReLU, ws-conv 3×3;  identity shortcut
//	GN, ReLU, global average pool, flatten, dense 10      → 10
//
// GroupNorm has 16 groups throughout (their setting); every convolution standardises its
// weight (layers.WSConv2D: De et al.'s scaled weight standardisation, without its learned
// gain) and has a bias; weights start He-normal. As in their code the projection shortcut
// reads the block's normalised and activated input. Dropout is 0 as in their DP runs.
func WRN164() nn.Spec {
	const groups = 16
	ls := []layers.Layer{wsConv(16, 3, 1, 1)}
	for g, width := range []int{64, 128, 256} {
		stride := 1
		if g > 0 {
			stride = 2
		}
		// First block: the shared pre-activation, then a projecting block.
		ls = append(ls, layers.GroupNorm{Groups: groups}, layers.ReLU{}, layers.Residual{
			Body:     []layers.Layer{wsConv(width, 3, stride, 1), layers.GroupNorm{Groups: groups}, layers.ReLU{}, wsConv(width, 3, 1, 1)},
			Shortcut: []layers.Layer{wsConv(width, 1, stride, 0)},
		})
		ls = append(ls, layers.Residual{Body: []layers.Layer{
			layers.GroupNorm{Groups: groups}, layers.ReLU{}, wsConv(width, 3, 1, 1),
			layers.GroupNorm{Groups: groups}, layers.ReLU{}, wsConv(width, 3, 1, 1),
		}})
	}
	ls = append(ls, layers.GroupNorm{Groups: groups}, layers.ReLU{}, layers.GlobalAvgPool2D{}, layers.Flatten{}, layers.Dense{Units: 10})
	return nn.Spec{Name: "wrn-16-4", InputShape: []int{3, 32, 32}, NumClasses: 10, Layers: ls}
}

// ResNetKlause is the normalised ResNet-9 of Klause et al. ("Differentially Private
// Training of Residual Networks with Scale Normalisation", 2022: 82.5 % on CIFAR-10 at
// ε = 8 with ScaleNorm), as in their public code with GroupNorm, on 3×32×32 images,
// 2,448,714 parameters:
//
//	conv 64, GN 32, ReLU                        → 64×32×32
//	conv 128, GN 32, ReLU, maxpool 2           → 128×16×16
//	residual (conv 128, GN, ReLU) ×2 + x, ScaleNorm (GN 32)
//	conv 256, GN 32, ReLU, maxpool 2           → 256×8×8
//	conv 256, GN 32, ReLU, maxpool 2           → 256×4×4
//	residual (conv 256, GN, ReLU) ×2 + x, ScaleNorm (GN 32)
//	maxpool 2 (their adaptive max pool to 2×2), flatten, dense 10
//
// Convolutions are 3×3 with padding 1 and no bias (the GroupNorm after each has one). The
// activation is ReLU where their code defaults to Mish (not a layer here); weights start
// He-normal.
func ResNetKlause() nn.Spec {
	cgr := func(f int) []layers.Layer {
		return []layers.Layer{
			layers.Conv2D{Filters: f, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, NoBias: true, Init: layers.HeNormal{}},
			layers.GroupNorm{Groups: min(32, f)}, layers.ReLU{},
		}
	}
	pool := layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
	res := func(f int) layers.Layer {
		return layers.Residual{Body: append(cgr(f), cgr(f)...), ScaleNorm: min(32, f)}
	}
	var ls []layers.Layer
	ls = append(ls, cgr(64)...)
	ls = append(ls, cgr(128)...)
	ls = append(ls, pool, res(128))
	ls = append(ls, cgr(256)...)
	ls = append(ls, pool)
	ls = append(ls, cgr(256)...)
	ls = append(ls, pool, res(256), pool, layers.Flatten{}, layers.Dense{Units: 10})
	return nn.Spec{Name: "resnet-klause", InputShape: []int{3, 32, 32}, NumClasses: 10, Layers: ls}
}

// WideCNN28 is a wide normalised residual network for 1×28×28 images (MNIST,
// Fashion-MNIST), 86,762 parameters, cheap enough for full-data DP runs on two cores:
//
//	ws-conv 32 3×3, GN 8, ReLU                               → 32×28×28
//	ws-conv 32 3×3 stride 2, GN 8, ReLU                      → 32×14×14
//	residual (ws-conv 32, GN 8, ReLU, ws-conv 32) + x, ScaleNorm (GN 8), ReLU
//	residual (ws-conv 64 stride 2, GN 8, ReLU, ws-conv 64)
//	         + ws-conv 64 1×1 stride 2, ScaleNorm (GN 8), ReLU   → 64×7×7
//	global average pool, flatten, dense 10
func WideCNN28() nn.Spec {
	return residualCNN28("wide-cnn-28", 32, 64, layers.GlobalAvgPool2D{})
}

// residualCNN28 is the layout of WideCNN28 and ResCNN28: two ws-conv stages of w channels
// (the second with stride 2), a residual block of w channels, a projecting residual block
// of w2 channels with stride 2 (ScaleNorm after both adds), then pool, flatten, dense 10.
func residualCNN28(name string, w, w2 int, pool layers.Layer) nn.Spec {
	gn := layers.GroupNorm{Groups: 8}
	return nn.Spec{Name: name, InputShape: []int{1, 28, 28}, NumClasses: 10, Layers: []layers.Layer{
		wsConv(w, 3, 1, 1), gn, layers.ReLU{},
		wsConv(w, 3, 2, 1), gn, layers.ReLU{},
		layers.Residual{Body: []layers.Layer{wsConv(w, 3, 1, 1), gn, layers.ReLU{}, wsConv(w, 3, 1, 1)}, ScaleNorm: 8},
		layers.ReLU{},
		layers.Residual{
			Body:      []layers.Layer{wsConv(w2, 3, 2, 1), gn, layers.ReLU{}, wsConv(w2, 3, 1, 1)},
			Shortcut:  []layers.Layer{wsConv(w2, 1, 2, 0)},
			ScaleNorm: 8,
		},
		layers.ReLU{}, pool, layers.Flatten{}, layers.Dense{Units: 10},
	}}
}

// ResCNN28 is a small normalised residual network for 1×28×28 images with a pooled dense
// head, 24,698 parameters: WideCNN28 at half width (16, 16, 16, 32 channels) with a 2×2
// average pool and a dense layer on its 3×3×32 values where WideCNN28 has a global average
// pool. On Fashion-MNIST at ε = 3 that head is worth 1.5 points over the global pool at the
// same width and plan (docs/results/utility.md, "A pooled head for the residual network"):
//
//	ws-conv 16 3×3, GN 8, ReLU                               → 16×28×28
//	ws-conv 16 3×3 stride 2, GN 8, ReLU                      → 16×14×14
//	residual (ws-conv 16, GN 8, ReLU, ws-conv 16) + x, ScaleNorm (GN 8), ReLU
//	residual (ws-conv 32 stride 2, GN 8, ReLU, ws-conv 32)
//	         + ws-conv 32 1×1 stride 2, ScaleNorm (GN 8), ReLU   → 32×7×7
//	average pool 2×2 stride 2, flatten, dense 10              → 288 → 10
func ResCNN28() nn.Spec {
	return residualCNN28("res-cnn-28", 16, 32, layers.AvgPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}})
}
