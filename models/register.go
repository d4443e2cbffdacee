package models

import "github.com/privtrain/privtrain/nn"

// Builtin lists the ready specs of this package, one per name: what the round-trip tests
// cover, and what nn.ModelFromCheckpoint falls back to for checkpoints written before
// checkpoints stored their architecture.
func Builtin() []nn.Spec {
	return []nn.Spec{
		LogisticRegression(),
		MNISTCNN(ReLU), MNISTCNN(Tanh),
		CIFAR10CNN(ReLU), CIFAR10CNN(Tanh),
	}
}

func init() {
	for _, s := range Builtin() {
		name := s.Name
		nn.RegisterSpec(name, func() nn.Spec {
			for _, s := range Builtin() {
				if s.Name == name {
					return s
				}
			}
			panic("models: spec " + name + " vanished")
		})
	}
}
