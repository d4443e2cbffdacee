// Package prior holds priors that see no data: random processes of images (DeadLeaves)
// and what is learnt from them, so far the whitening map of a fixed feature extractor's
// output (Whitening), with its cache between runs (Map, CacheDir). Whatever is computed
// here depends on the process's parameters and seed alone, never on a data set, so using
// it costs no privacy (the idea of DP-RandP, Tang et al. 2023: learn from images of random
// processes, then train privately). layers.Whitened puts a whitening map after a
// ScatterNet front end.
package prior
