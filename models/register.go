package models

import "github.com/privtrain/privtrain/nn"

// builtin makes the ready specs of this package, one per name.
var builtin = []func() nn.Spec{
	LogisticRegression,
	func() nn.Spec { return MNISTCNN(ReLU) }, func() nn.Spec { return MNISTCNN(Tanh) },
	func() nn.Spec { return CIFAR10CNN(ReLU) }, func() nn.Spec { return CIFAR10CNN(Tanh) },
	func() nn.Spec { return CIFAR10TBCNN(ReLU) }, func() nn.Spec { return CIFAR10TBCNN(Tanh) },
	ScatterLinearMNIST, ScatterLinearCIFAR10,
	func() nn.Spec { return ScatterCNNMNIST(ReLU) }, func() nn.Spec { return ScatterCNNMNIST(Tanh) },
	func() nn.Spec { return ScatterCNNCIFAR10(ReLU) }, func() nn.Spec { return ScatterCNNCIFAR10(Tanh) },
	WRN164, ResNetKlause, WideCNN28, ResCNN28,
}

// Builtin lists the ready specs of this package, one per name: what the round-trip tests
// cover, and what nn.ModelFromCheckpoint falls back to for checkpoints written before
// checkpoints stored their architecture.
func Builtin() []nn.Spec {
	specs := make([]nn.Spec, len(builtin))
	for i, build := range builtin {
		specs[i] = build()
	}
	return specs
}

// init registers each spec under its name; a lookup builds that one spec only.
func init() {
	for _, build := range builtin {
		nn.RegisterSpec(build().Name, build)
	}
}
