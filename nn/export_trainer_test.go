package nn

// Decode exposes the checkpoint reader to the external tests' fuzz targets.
var Decode = decode
