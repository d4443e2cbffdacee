package models

import (
	"fmt"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// Activation is the nonlinearity of the hidden layers.
type Activation int

const (
	// ReLU is what the reference tutorials use.
	ReLU Activation = iota
	// Tanh is a bounded ("tempered") activation that keeps gradient norms small and does
	// better than ReLU under DP-SGD (Papernot et al., "Tempered Sigmoid Activations for
	// Deep Learning with Differential Privacy", 2021).
	Tanh
)

var activationNames = [...]string{ReLU: "relu", Tanh: "tanh"}

func (a Activation) String() string {
	if a < 0 || int(a) >= len(activationNames) {
		return fmt.Sprintf("Activation(%d)", int(a))
	}
	return activationNames[a]
}

func (a Activation) layer() layers.Layer {
	if a == Tanh {
		return layers.Tanh{}
	}
	return layers.ReLU{}
}

// LogisticRegression is softmax regression 784 → 10 on 1×28×28 images: 7,850 parameters
// (the DP-LSSGD paper's LR model, seeds digest §6.4). Glorot-uniform weights, zero bias.
func LogisticRegression() nn.Spec {
	return nn.Spec{
		Name:       "logreg",
		InputShape: []int{1, 28, 28},
		NumClasses: 10,
		Layers:     []layers.Layer{layers.Flatten{}, layers.Dense{Units: 10}},
	}
}

// MNISTCNN is the TensorFlow Privacy MNIST tutorial CNN (seeds digest §6.1) on 1×28×28
// images, 26,010 parameters:
//
//	conv 16 8×8 stride 2, padding 3 (TF 'same')  → 16×14×14   1,040
//	maxpool 2×2 stride 1                          → 16×13×13
//	conv 32 4×4 stride 2 (valid)                  → 32×5×5     8,224
//	maxpool 2×2 stride 1                          → 32×4×4
//	flatten, dense 32                             → 32        16,416
//	dense 10 (logits)                             → 10           330
//
// with act after both convolutions and the hidden dense layer. Keras defaults as in the
// tutorial: Glorot-uniform kernels, zero biases.
func MNISTCNN(act Activation) nn.Spec {
	return nn.Spec{
		Name:       "mnist-cnn-" + act.String(),
		InputShape: []int{1, 28, 28},
		NumClasses: 10,
		Layers: []layers.Layer{
			layers.Conv2D{Filters: 16, Kernel: [2]int{8, 8}, Stride: [2]int{2, 2}, Padding: [2]int{3, 3}},
			act.layer(),
			layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
			layers.Conv2D{Filters: 32, Kernel: [2]int{4, 4}, Stride: [2]int{2, 2}},
			act.layer(),
			layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
			layers.Flatten{},
			layers.Dense{Units: 32},
			act.layer(),
			layers.Dense{Units: 10},
		},
	}
}

// CIFAR10CNN is the TensorFlow CIFAR-10 tutorial CNN (tensorflow/models
// tutorials/image/cifar10, seeds digest §6.2) on 3×32×32 images, 1,068,298 parameters, the
// tutorial's count:
//
//	center crop 24×24 (the tutorial's evaluation crop)   → 3×24×24
//	conv 64 5×5 stride 1, padding 2 ('same')             → 64×24×24     4,864
//	maxpool 3×3 stride 2, padding 1                      → 64×12×12
//	conv 64 5×5 stride 1, padding 2                      → 64×12×12   102,464
//	maxpool 3×3 stride 2, padding 1                      → 64×6×6
//	flatten, dense 384                                   → 384        885,120
//	dense 192                                            → 192         73,920
//	dense 10 (logits)                                    → 10           1,930
//
// with act after both convolutions and both hidden dense layers. Differences from the
// tutorial, all deliberate: no local response normalisation (a fixed per-example
// transform, not in Gorgonia, and not part of the private-training literature's use of
// this net); no random crops, flips or contrast changes (augmentation belongs to data
// loading); pooling padded symmetrically by one cell where TF 'same' pads 0 before and 1
// after (identical output sizes, windows shifted by one; Gorgonia's asymmetric pool
// padding is broken); Glorot-uniform kernels and zero biases instead of truncated normals
// and a 0.1 bias.
func CIFAR10CNN(act Activation) nn.Spec {
	return nn.Spec{
		Name:       "cifar10-cnn-" + act.String(),
		InputShape: []int{3, 32, 32},
		NumClasses: 10,
		Layers: []layers.Layer{
			layers.CenterCrop{Height: 24, Width: 24},
			layers.Conv2D{Filters: 64, Kernel: [2]int{5, 5}, Padding: [2]int{2, 2}},
			act.layer(),
			layers.MaxPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
			layers.Conv2D{Filters: 64, Kernel: [2]int{5, 5}, Padding: [2]int{2, 2}},
			act.layer(),
			layers.MaxPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
			layers.Flatten{},
			layers.Dense{Units: 384},
			act.layer(),
			layers.Dense{Units: 192},
			act.layer(),
			layers.Dense{Units: 10},
		},
	}
}

// CIFAR10TBCNN is the end-to-end CIFAR-10 CNN of Tramèr & Boneh, "Differentially Private
// Learning Needs Better Features (or Much More Data)", ICLR 2021 (their public code's
// CIFAR-10 CNN; 59.2 % test accuracy at ε = 3 with tanh), on 3×32×32 images, 550,570
// parameters:
//
//	conv 32 3×3, padding 1     → 32×32×32       896
//	conv 32 3×3, padding 1     → 32×32×32     9,248
//	maxpool 2×2 stride 2       → 32×16×16
//	conv 64, conv 64 (3×3, 1)  → 64×16×16    18,496 + 36,928
//	maxpool 2×2 stride 2       → 64×8×8
//	conv 128, conv 128         → 128×8×8     73,856 + 147,584
//	maxpool 2×2 stride 2       → 128×4×4
//	flatten, dense 128         → 128        262,272
//	dense 10 (logits)          → 10           1,290
//
// with act after every convolution and the hidden dense layer. Glorot-uniform kernels,
// zero biases (T&B use PyTorch's default initialisation).
func CIFAR10TBCNN(act Activation) nn.Spec {
	ls := []layers.Layer{}
	for _, f := range []int{32, 64, 128} {
		for range 2 {
			ls = append(ls, layers.Conv2D{Filters: f, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, act.layer())
		}
		ls = append(ls, layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}})
	}
	ls = append(ls, layers.Flatten{}, layers.Dense{Units: 128}, act.layer(), layers.Dense{Units: 10})
	return nn.Spec{Name: "cifar10-tb-cnn-" + act.String(), InputShape: []int{3, 32, 32}, NumClasses: 10, Layers: ls}
}

// The ScatterNet models of Tramèr & Boneh (2021) start with the order-2 scattering
// transform Scattering2D{J: 2, L: 8} (Kymatio's, T&B's settings), a fixed feature extractor
// without parameters: nn runs it as a front end, and its trainer computes the features of
// a dataset once before training (package scatter; about 2 ms of CPU per 28×28 image).
// It costs no privacy. The 81 scattering channels per image channel are normalised by
// GroupNorm without affine parameters, in groups of 3 channels: 27 groups for the 81
// channels of a grey image, 81 for the 243 of a colour one. T&B's code takes the number of
// groups as a hyperparameter (9, 27 or 81); 27 groups of 3 channels keep neighbouring
// scattering paths of one scale together without normalising each channel alone, and
// the colour variant keeps the same 3 channels per group. T&B's alternative, a
// per-channel standardisation by privately estimated statistics, would cost privacy
// budget of its own and is not built in.
var scatterNet = layers.Scattering2D{J: 2, L: 8}

// scatterNorm is the GroupNorm of c scattering channels, 3 to a group. Without parameters
// and right after the scattering, it is computed once with it as part of the front end
// (with the linear models' Flatten; nn/frontend.go).
func scatterNorm(c int) layers.Layer { return layers.GroupNorm{Groups: c / 3, NoAffine: true} }

// ScatterLinearMNIST is ScatterNet + linear on 1×28×28 images (MNIST, Fashion-MNIST;
// T&B: 89.7 % on Fashion-MNIST at ε = 3), 39,700 parameters:
//
//	scattering J=2, L=8          → 81×7×7 (front end)
//	group norm, 27 groups        → 81×7×7
//	flatten, dense 10 (logits)   → 10       39,700
func ScatterLinearMNIST() nn.Spec {
	return nn.Spec{Name: "scatter-linear-mnist", InputShape: []int{1, 28, 28}, NumClasses: 10, Layers: []layers.Layer{
		scatterNet, scatterNorm(81), layers.Flatten{}, layers.Dense{Units: 10},
	}}
}

// ScatterPriorLinearMNIST is ScatterLinearMNIST with the scattering features whitened by
// a prior that sees no data (layers.Whitened): the covariance of the same features of
// 70,000 dead-leaves images (prior.DeadLeaves{Scenes: 35000, Seed: 1}, two views of each
// scene), eigenvalues floored at 10⁻³ of the largest. 1×28×28 images only (3,969
// features; a colour image's 11,907 are more than a whitening map may have). The map is
// computed once per machine (minutes on two cores) and cached (prior.CacheDir).
// 39,700 parameters:
//
//	scattering J=2, L=8, group norm, flatten  → 3,969 (front end)
//	whitening by the dead-leaves prior        → 3,969 (front end)
//	dense 10 (logits)                         → 10       39,700
func ScatterPriorLinearMNIST() nn.Spec {
	return nn.Spec{Name: "scatter-prior-linear-mnist", InputShape: []int{1, 28, 28}, NumClasses: 10, Layers: []layers.Layer{
		ScatterPrior(), layers.Dense{Units: 10},
	}}
}

// ScatterPrior is the front end of ScatterPriorLinearMNIST for 1×28×28 images.
func ScatterPrior() layers.Whitened {
	return layers.Whitened{
		Base:  []layers.Layer{scatterNet, scatterNorm(81), layers.Flatten{}},
		Prior: prior.DeadLeaves{Scenes: 35000, Seed: 1},
		Floor: 1e-3,
	}
}

// ScatterLinearCIFAR10 is ScatterNet + linear on 3×32×32 images, 155,530 parameters:
//
//	scattering J=2, L=8          → 243×8×8 (front end)
//	group norm, 81 groups        → 243×8×8
//	flatten, dense 10 (logits)   → 10      155,530
func ScatterLinearCIFAR10() nn.Spec {
	return nn.Spec{Name: "scatter-linear-cifar10", InputShape: []int{3, 32, 32}, NumClasses: 10, Layers: []layers.Layer{
		scatterNet, scatterNorm(243), layers.Flatten{}, layers.Dense{Units: 10},
	}}
}

// ScatterCNNMNIST is ScatterNet + CNN on 1×28×28 images, 33,066 parameters:
//
//	scattering J=2, L=8                   → 81×7×7 (front end)
//	group norm, 27 groups                 → 81×7×7
//	conv 16 3×3 stride 2, padding 1       → 16×4×4    11,680
//	conv 32 3×3, padding 1                → 32×4×4     4,640
//	flatten, dense 32                     → 32        16,416
//	dense 10 (logits)                     → 10           330
//
// with act (T&B: tanh) after both convolutions and the hidden dense layer.
func ScatterCNNMNIST(act Activation) nn.Spec {
	return nn.Spec{Name: "scatter-cnn-mnist-" + act.String(), InputShape: []int{1, 28, 28}, NumClasses: 10, Layers: []layers.Layer{
		scatterNet, scatterNorm(81),
		layers.Conv2D{Filters: 16, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, act.layer(),
		layers.Conv2D{Filters: 32, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, act.layer(),
		layers.Flatten{}, layers.Dense{Units: 32}, act.layer(), layers.Dense{Units: 10},
	}}
}

// ScatterCNNCIFAR10 is ScatterNet + CNN on 3×32×32 images (T&B: 69.3 % on CIFAR-10 at
// ε = 3), 187,210 parameters:
//
//	scattering J=2, L=8                   → 243×8×8 (front end)
//	group norm, 81 groups                 → 243×8×8
//	conv 64 3×3, padding 1                → 64×8×8   140,032
//	maxpool 2×2 stride 2                  → 64×4×4
//	conv 64 3×3, padding 1                → 64×4×4    36,928
//	flatten, dense 10 (logits)            → 10        10,250
//
// with act (T&B: tanh) after both convolutions.
func ScatterCNNCIFAR10(act Activation) nn.Spec {
	return nn.Spec{Name: "scatter-cnn-cifar10-" + act.String(), InputShape: []int{3, 32, 32}, NumClasses: 10, Layers: []layers.Layer{
		scatterNet, scatterNorm(243),
		layers.Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, act.layer(),
		layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}},
		layers.Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, act.layer(),
		layers.Flatten{}, layers.Dense{Units: 10},
	}}
}
