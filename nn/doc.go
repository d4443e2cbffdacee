// Package nn holds the Model (a Gorgonia graph for a fixed physical batch, its named
// parameters and dtype) and, later, the Trainer and checkpoints.
package nn
