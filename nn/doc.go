// Package nn holds the Model: a network compiled for a fixed physical batch size, its named
// parameters as one flat vector, the summed loss (the softmax cross-entropy, or the focal
// loss: WithLoss), the private and non-private gradient steps, and its two engines.
// Training runs (Trainer) are package training's, the checkpoint's data package
// checkpoint's (nn/checkpoint) and its file format package tensorfile's (nn/tensorfile),
// PyTorch export package export's; this package writes and reads the model's part of a
// checkpoint (Model.WriteCheckpoint, ModelFromCheckpoint, LoadModel).
//
// Build a model from a Spec (package models has ready ones) and use it in physical batches:
//
//	m, err := nn.New(models.MNISTCNN(models.ReLU), 256, nn.WithSeed(1)) // float32
//	grad := make([]float64, m.NumParams())
//	rule := clipping.Flat{C: 1}
//	for _, chunk := range logicalBatch { // padded to 256 rows, padding masked out
//		st, err := m.ClippedGradient(nn.Batch{X: chunk.X, Labels: chunk.Y, Mask: chunk.Mask}, rule, grad)
//		…                                 // grad += Σ_i c_i g_i; st.Loss, st.Correct, st.Norms
//	}
//	// dpoptim adds N(0, (z·rule.Bound())² I), divides by the expected batch size, updates:
//	m.Params(theta); …; m.SetParams(theta)
//
// How a private step works. The training pass runs the forward pass, the loss summed over
// the batch, and ONE backpropagation of that sum to every parametrised layer's
// pre-activation Z (not to the weights: it never forms the batch weight gradient).
// Example i's loss depends only on row i, so row i of ∂loss/∂Z is example i's own gradient
// there; with the layer's input (or im2col'd input for a convolution) it gives example i's
// parameter gradient in closed form, which package clipping clips and sums. Gradient
// (non-private) sums the same taps without clipping.
//
// Contracts:
//   - Parameters are exchanged as flat []float64 in Layout order (declaration order, weight
//     before bias, each tensor row-major); float32 models convert. ParamLayers names the
//     parametrised layers, the units of clipping.PerLayer.
//   - ClippedGradient and Gradient ADD into the caller's buffer, so the chunks of one
//     logical batch accumulate; on error the buffer is untouched.
//   - Rows whose Mask entry is false contribute exactly nothing (loss, gradient, count);
//     their input and label are not read.
//   - Evaluate and Predict use a forward-only pass that shares the parameter memory.
//   - A Model is not safe for concurrent use; returned norms alias its buffers until the
//     next step.
//
// Using a trained model. A checkpoint stores the model's Architecture (every layer with its
// settings); ModelFromCheckpoint and LoadModel rebuild the model from it alone, package
// layers' layers by the codecs their own files register (layers.Codecs), layers of other
// packages by the name given to layers.Register, and checkpoints written before
// architectures were stored by the model name registered with RegisterSpec (package
// models registers its own). A Predictor computes logits and probabilities for any number
// of examples and is safe for concurrent use; package export writes the parameters as a
// safetensors file in PyTorch's layouts for an nn.Sequential of the same layers, each
// layer naming its own module (layers.TorchExporter). Model.SetGroupSize makes the
// clipping treat each group of K consecutive rows as one example (the trainer's
// augmentation multiplicity, package training).
//
// Engines. A Model runs on one of two engines (WithEngine, Model.Engine). The native engine,
// the default whenever every layer is one of package layers' own, runs layers.Native: each
// chunk of rows is loaded, run forward, scored and run backward to the taps, and clipped
// while still in cache, chunks spread over all cores (GOMAXPROCS), nothing allocated per
// step, results independent of the core count. The Gorgonia engine runs Gorgonia graphs on
// its tape machine; it is the reference the native engine is tested against (to 1e-10 in
// float64, per-example gradients included) and the engine of layers from other packages.
// See docs/performance.md for what each costs.
//
// Front ends. Leading layers that are fixed — no parameters, independent of the data,
// deterministic: layers.FrontEnd, such as layers.Scattering2D — run outside the trainable
// network (frontend.go). New compiles only the layers after them, on their output shape
// (FeatureShape), so they neither force the Gorgonia engine nor run in every step; the
// model's InputShape stays the raw input's. Evaluate, Predict, Logits, Gradient and
// ClippedGradient on raw batches apply the front end per batch; the Trainer (package
// training) computes the
// features of its training and test sets once, before its first step (FrontEndFeatures,
// TrainerConfig.Callbacks.OnFrontEnd), and trains on them. Per-example gradients, clipping and
// noise concern the trainable parameters only, exactly as if the features were the data:
// the front end costs no privacy. On the native engine in float32, the parameter-free
// per-example layers right after the FrontEnd layers (layers.Skippable: the scatter
// models' GroupNorm without affine and Flatten) join the front end and are computed once
// too, by the native ops themselves and in their internal layout, so training is bit for
// bit what computing them in every step gives (FrontEnd then names them, and FeatureShape
// is their output). Checkpoints store the front-end layers in the Architecture like any
// other. Package training keeps the features in a feature cache across runs
// (training.CachedFrontEndFeatures, TrainerConfig.FeatureCache.Dir).
//
// Gorgonia v0.9.18 pitfalls the Gorgonia engine guards against (tests reproduce each in raw
// Gorgonia): a second Backpropagate on a graph returns the first gradients, so each graph
// differentiates once; SoftMax and LogSoftMax of one input merge, and LogSoftMax shifts
// rows by the wrong maximum, so the loss is a custom numerically stable op; RunAll needs a
// Reset before every run; intermediate values may be overwritten by later ops, so taps are
// copied out by Read nodes inside the run; and a Read of a view (Reshape after Tanh) sees
// the view's memory overwritten by the backward pass, so dense inputs come from the
// forward-only graph.
package nn
