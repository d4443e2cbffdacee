#!/usr/bin/python3
"""Time PyTorch's NON-private training step on the same models privtrain benchmarks.

Models: the TF Privacy MNIST tutorial CNN (26,010 parameters) and logistic regression 784->10
(7,850), float32, batch 256, data batches already in memory (random pixels and labels; the cost
of a step does not depend on the values). Plain SGD step: zero_grad, forward, cross-entropy
(summed), backward, update.

Prints one line per model: "torch <model> <examples/s>" (median over -repeats timed windows).
Run with 2 threads and the OpenMP build of OpenBLAS, e.g.
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/torch_step.py
(bench/compare does this for you).
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def mnist_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 8, stride=2, padding=3), nn.ReLU(), nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, stride=2), nn.ReLU(), nn.MaxPool2d(2, 1),
        nn.Flatten(), nn.Linear(512, 32), nn.ReLU(), nn.Linear(32, 10))


def logreg():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))


def time_model(name, model, batch, seconds, repeats, nbatches=16):
    n_params = sum(p.numel() for p in model.parameters())
    xs = [torch.rand(batch, 1, 28, 28) for _ in range(nbatches)]
    ys = [torch.randint(0, 10, (batch,)) for _ in range(nbatches)]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % nbatches]), ys[i % nbatches])
        loss.backward()
        opt.step()

    for i in range(20):  # warm-up
        step(i)
    rates = []
    for _ in range(repeats):
        steps, start = 0, time.perf_counter()
        while True:
            step(steps)
            steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append(steps * batch / elapsed)
    print(f"torch {name} {statistics.median(rates):.1f} params={n_params} "
          f"min={min(rates):.1f} max={max(rates):.1f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-model", default="all", choices=["all", "mnistcnn", "logreg"])
    ap.add_argument("-batch", type=int, default=256)
    ap.add_argument("-seconds", type=float, default=2.0, help="length of one timed window")
    ap.add_argument("-repeats", type=int, default=3)
    ap.add_argument("-threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.model in ("all", "mnistcnn"):
        time_model("mnistcnn", mnist_cnn(), args.batch, args.seconds, args.repeats)
    if args.model in ("all", "logreg"):
        time_model("logreg", logreg(), args.batch, args.seconds, args.repeats)


if __name__ == "__main__":
    main()
