package models

import (
	"fmt"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
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

func (a Activation) String() string {
	switch a {
	case ReLU:
		return "relu"
	case Tanh:
		return "tanh"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
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
