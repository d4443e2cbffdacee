// Package models holds the networks of the seed papers as nn.Spec values, ready for
// nn.New:
//
//	LogisticRegression()  784 → 10 softmax regression          7,850 parameters
//	MNISTCNN(act)         TF Privacy MNIST tutorial CNN        26,010 parameters
//	CIFAR10CNN(act)       TF CIFAR-10 tutorial CNN          1,068,298 parameters
//	CIFAR10TBCNN(act)     Tramèr & Boneh's CIFAR-10 CNN       550,570 parameters
//	ScatterLinearMNIST()  ScatterNet + linear, 1×28×28         39,700 parameters
//	ScatterLinearCIFAR10()  ScatterNet + linear, 3×32×32      155,530 parameters
//	ScatterCNNMNIST(act)  ScatterNet + CNN, 1×28×28            33,066 parameters
//	ScatterCNNCIFAR10(act)  ScatterNet + CNN, 3×32×32         187,210 parameters
//	ScatterPriorLinearMNIST()  ScatterNet, whitened by a
//	                      dead-leaves prior, + linear, 1×28×28  39,700 parameters
//
// The Scatter models (Tramèr & Boneh, ICLR 2021) start with layers.Scattering2D{J: 2,
// L: 8}, a fixed wavelet transform that nn runs as a front end: its features are computed
// once per dataset, not in every step, and cost no privacy. ScatterPriorLinearMNIST's
// front end (ScatterPrior, a layers.Whitened) also whitens them by a map learnt from
// synthetic images (package prior), computed once per machine and cached; it is not in
// Builtin, whose round-trip tests would compute it.
//
// act is ReLU (as the tutorials) or Tanh, a bounded activation that usually trains better
// under clipping. Every model starts from Keras's defaults: Glorot-uniform weights and
// zero biases. The CIFAR network takes 3×32×32 images and crops their central 24×24, as
// the tutorial does at evaluation; see CIFAR10CNN for what differs from the tutorial.
//
//	m, err := nn.New(models.MNISTCNN(models.Tanh), 256) // float32, batch 256
package models
