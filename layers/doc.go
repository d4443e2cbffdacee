// Package layers holds the building blocks of privtrain networks — Dense, Conv2D,
// WSConv2D (weight-standardised),
// MaxPool2D, AvgPool2D, GlobalAvgPool2D, GroupNorm, ReLU, Tanh, Flatten, CenterCrop, and
// Residual, a block of other layers with a skip connection — as
// Gorgonia graph fragments that expose what per-example gradient clipping needs, each
// with a native kernel beside it.
//
// A Layer is configuration only. nn.Model asks each layer for its output shape and
// parameter specs, lays the parameters out in one flat vector (declaration order, weight
// before bias, each tensor row-major) and calls Apply to add the layer to its graphs. A
// parametrised layer returns a Tap: its input node (for Conv2D, the im2col node Gorgonia's
// Conv2d multiplies by the filter) and its pre-activation output Z, to which the model
// backpropagates the summed loss once, and a clipping.Shape that binds their values to the
// layer kind's clipping.Gradient, which turns them into per-example gradients.
//
// Conventions (Keras-compatible where it matters for reproducing the tutorials):
//   - images are CHW per example, NCHW in the graph;
//   - Dense weights are [in, out]; Conv2D weights [filters, channels, kh, kw];
//   - weights start Glorot-uniform (the Keras default) unless Init says otherwise (an
//     Initializer value: HeNormal{}, Constant{Value: 0.25}, …); biases
//     start at zero;
//   - padding is symmetric only (Gorgonia's asymmetric max-pool padding computes wrong
//     windows; its Conv2d has none), and padded cells never win a max-pool.
//
// The same layers also run without Gorgonia: Native compiles a stack of them onto
// preallocated buffers (NHWC inside, im2col patches of contiguous runs, conv or dense fused
// with the activation that follows, per-worker scratch for one chunk of rows) and runs the
// forward pass and the backward pass to the taps row range by row range. The float32 hot
// loops — GEMM (package internal/gemm), max-pool, im2col/col2im, the ReLU gradient — are
// AVX-512 or AVX2 assembly where the CPU has it, NEON assembly on arm64 (the ReLU and its
// gradient, max-pool forward, im2col/col2im), with Go versions elsewhere (tested to agree
// bit for bit). nn uses Native whenever every layer of a network is one of these; tests
// hold it to the Gorgonia graphs to 1e-12 in float64.
//
// One file per layer kind holds the layer, its Gorgonia fragment (Apply, the reference)
// and its native op, which it adds to NewNative's compiler in compileNative: NewNative
// knows no kind. An activation that a Conv2D or Dense can apply as it stores its output
// says so with fusedAct; a layer that takes its flat input in any order (Dense) with
// acceptsOrder. A parametrised native op also implements tapOp: it hands over its layer's
// clipping.Gradient once the activations' storage is known.
//
// A layer's file also says how the layer is stored and exported: an init function
// registers its checkpoint settings (registerSettings with a snake_case settings struct,
// or registerPlain for a layer without settings; nn's Architecture reads them through
// Codecs), and TorchModule (TorchExporter) names its PyTorch module, with TorchParams
// (TorchParamsExporter) where PyTorch lays the parameters out otherwise (Dense) or the
// module has fixed tensors (Scattering2D's filters), and TorchDefinition (TorchDefiner)
// the module's Python class where torch.nn has none (CenterCrop, Scattering2D). Neither
// nn nor any other package lists the kinds.
//
// Adding a parametrised layer is two new files and no edit elsewhere: the layer (fragment,
// native op, stored settings, PyTorch module, e.g. groupnorm.go) and its per-example
// gradient (a clipping.ExampleKind or a full clipping.Gradient, with the clipping.Shape
// that binds the fragment's tap, e.g. groupnorm_grad.go). The test-only Scale layer
// (scale_test.go, scale_grad_test.go) is such a pair; scale_nn_test.go trains it natively,
// saves and reloads it. A layer without a native op still runs, on nn's Gorgonia engine;
// NewNative's ErrNotNative (and nn.Model.EngineReason) name it. A layer of another package
// is stored with Register and exported if it implements TorchExporter, but cannot
// have a native op.
//
// A composite layer (Residual, residual.go) is one layer of the sequence built of others:
// its parameters are its sub-layers', its Tap nests theirs (Tap.Nested; engines bind
// Tap.Leaves, one clipping.Gradient per parametrised sub-layer, and nn names the per-layer
// clipping groups by Grouped.TapGroups), its native compiler compiles the sub-layers in
// line between copy and add ops, and its settings store the sub-layers as nn's
// architecture stores layers.
//
// A layer that is fixed — no parameters, independent of the data, deterministic — may say
// so by implementing FrontEnd (frontend.go), as Scattering2D does: nn then runs the leading
// FrontEnd layers of a network outside the trainable network, once per dataset, and needs
// no native op for them. The Skippable layers after them (parameter-free, per example)
// can join it: NewNativeFront computes them once with the native ops, NewNativeAfter
// compiles the network to start after them.
package layers
