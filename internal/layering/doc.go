// Package layering has no code: its test checks that the module's imports follow the
// layers of docs/architecture.md ("Layers of the code"), that no package under the root
// internal/ imports a product package, and that the package map lists every package.
// Its docs test checks README.md and docs/: relative links and anchors resolve, the README
// stays a front page with .ci/run's test command, and its Go example compiles.
package layering
