// Package models holds the networks of the seed papers as nn.Spec values, ready for
// nn.New:
//
//	LogisticRegression()  784 → 10 softmax regression          7,850 parameters
//	MNISTCNN(act)         TF Privacy MNIST tutorial CNN        26,010 parameters
//	CIFAR10CNN(act)       TF CIFAR-10 tutorial CNN          1,068,298 parameters
//
// act is ReLU (as the tutorials) or Tanh, a bounded activation that usually trains better
// under clipping. Every model starts from Keras's defaults: Glorot-uniform weights and
// zero biases. The CIFAR network takes 3×32×32 images and crops their central 24×24, as
// the tutorial does at evaluation; see CIFAR10CNN for what differs from the tutorial.
//
//	m, err := nn.New(models.MNISTCNN(models.Tanh), 256) // float32, batch 256
package models
