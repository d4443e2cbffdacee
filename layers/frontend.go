package layers

// FrontEnd is a layer that is fixed: it has no parameters, does not depend on the data
// and computes the same output for the same input every time (a fixed feature extractor,
// such as Scattering2D). Such a layer costs no privacy, and it need not be recomputed in
// every training step: nn runs the leading FrontEnd layers of a network outside the
// trainable network (its trainer computes their output once per dataset), and compiles
// only the layers after them; on the native engine in float32 the Skippable layers that
// follow (GroupNorm without affine, Flatten, …) join them (NewNativeFront).
//
// Implementing FrontEnd is a promise; a layer whose output depends on anything learnt or
// estimated from data (a normalisation by dataset statistics, say) must not implement it.
type FrontEnd interface {
	Layer
	// NewTransform returns the transform for per-example input shape in (one OutputShape
	// accepts): it maps n examples, n·prod(in) values one after the other, to n·prod(out)
	// values, out = OutputShape(in). It must be deterministic and safe for concurrent
	// use; it may use every core for one call.
	NewTransform(in []int) (func(x []float32) ([]float32, error), error)
}
