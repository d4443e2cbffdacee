#!/usr/bin/python3
"""Time PyTorch's NON-private training step on the same models privtrain benchmarks.

Models (names as privtrain's BenchmarkStep cases): the TF Privacy MNIST tutorial CNN with ReLU
(mnistcnn) and tanh (mnist-cnn-tanh), 26,010 parameters; logistic regression 784->10 (logreg,
7,850); the TF CIFAR-10 tutorial CNN as privtrain's models.CIFAR10CNN builds it (center crop
24x24, no LRN, pools padded by 1) with ReLU (cifar10-cnn-relu) and tanh (cifar10-cnn-tanh),
1,068,298 parameters. float32, batch 256, data batches already in memory (random pixels and
labels; the cost of a step does not depend on the values, except tanh's a little). Plain SGD
step: zero_grad, forward, cross-entropy (summed), backward, update.

With -module FILE.py it times instead the network of a module that privtrain's export.PyTorch
wrote (build_model(), INPUT_SHAPE, NUM_CLASSES, MODEL): any built-in model, exactly as privtrain
defines it, with PyTorch's own initialisation (bench/paths uses this).

Prints one line per model: "torch <model> <examples/s>" (median over -repeats timed windows).
Run with 2 threads and the OpenMP build of OpenBLAS, e.g.
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/torch_step.py
(bench/compare does this for you).
"""
import argparse
import runpy
import statistics
import time

import torch
import torch.nn as nn


def mnist_cnn(act=nn.ReLU):
    return nn.Sequential(
        nn.Conv2d(1, 16, 8, stride=2, padding=3), act(), nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, stride=2), act(), nn.MaxPool2d(2, 1),
        nn.Flatten(), nn.Linear(512, 32), act(), nn.Linear(32, 10))


def logreg():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))


class CenterCrop(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x):
        top = (x.shape[2] - self.size) // 2
        left = (x.shape[3] - self.size) // 2
        return x[:, :, top:top + self.size, left:left + self.size]


def cifar10_cnn(act=nn.ReLU):
    return nn.Sequential(
        CenterCrop(24),
        nn.Conv2d(3, 64, 5, padding=2), act(), nn.MaxPool2d(3, 2, padding=1),
        nn.Conv2d(64, 64, 5, padding=2), act(), nn.MaxPool2d(3, 2, padding=1),
        nn.Flatten(), nn.Linear(64 * 6 * 6, 384), act(), nn.Linear(384, 192), act(),
        nn.Linear(192, 10))


# name -> (constructor, input shape of one example)
MODELS = {
    "mnistcnn": (lambda: mnist_cnn(nn.ReLU), (1, 28, 28)),
    "mnist-cnn-tanh": (lambda: mnist_cnn(nn.Tanh), (1, 28, 28)),
    "logreg": (logreg, (1, 28, 28)),
    "cifar10-cnn-relu": (lambda: cifar10_cnn(nn.ReLU), (3, 32, 32)),
    "cifar10-cnn-tanh": (lambda: cifar10_cnn(nn.Tanh), (3, 32, 32)),
}


def peak_rss_mb():
    """This process's peak resident set since its exec (VmHWM), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


def time_model(name, model, shape, batch, seconds, repeats, nbatches=16, classes=10, frontend=0):
    if frontend:  # the fixed leading modules' output, computed once as privtrain's trainer does
        nbatches = 2  # (the scattering of 16 batches would take minutes)
    xs = [torch.rand(batch, *shape) for _ in range(nbatches)]
    if frontend:
        with torch.no_grad():
            xs = [model[:frontend](x) for x in xs]
        model = model[frontend:]
    n_params = sum(p.numel() for p in model.parameters())
    ys = [torch.randint(0, classes, (batch,)) for _ in range(nbatches)]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % nbatches]), ys[i % nbatches])
        loss.backward()
        opt.step()

    for i in range(20):  # warm-up
        step(i)
    rates, cpu_rates = [], []
    for _ in range(repeats):
        steps, start, cpu0 = 0, time.perf_counter(), time.process_time()
        while True:
            step(steps)
            steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append(steps * batch / elapsed)
        # examples per CPU-second of the process, times its threads: what the step would
        # reach on that many cores of its own (OpenMP's spinning threads count as busy)
        cpu_rates.append(steps * batch / (time.process_time() - cpu0) * torch.get_num_threads())
    print(f"torch {name} {statistics.median(rates):.1f} params={n_params} "
          f"min={min(rates):.1f} max={max(rates):.1f} cpu-examples/s={statistics.median(cpu_rates):.1f} "
          f"rss-mb={peak_rss_mb():.1f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-model", default="mnistcnn,logreg",
                    help="comma-separated names (" + ", ".join(MODELS) + ") or all")
    ap.add_argument("-batch", type=int, default=256)
    ap.add_argument("-seconds", type=float, default=2.0, help="length of one timed window")
    ap.add_argument("-repeats", type=int, default=3)
    ap.add_argument("-threads", type=int, default=2)
    ap.add_argument("-module", help="time the model of this module written by privtrain's export.PyTorch instead")
    ap.add_argument("-frontend", type=int, default=0,
                    help="with -module: the number of leading fixed modules (a scattering front end) "
                         "computed once on the batches, outside the timed step")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.module:
        m = runpy.run_path(args.module)
        time_model(m["MODEL"], m["build_model"]().train(), tuple(m["INPUT_SHAPE"]), args.batch,
                   args.seconds, args.repeats, classes=m["NUM_CLASSES"], frontend=args.frontend)
        return
    names = list(MODELS) if args.model == "all" else args.model.split(",")
    for name in names:
        if name not in MODELS:
            ap.error(f"unknown model {name!r}: want one of {', '.join(MODELS)}")
    for name in names:
        build, shape = MODELS[name]
        time_model(name, build(), shape, args.batch, args.seconds, args.repeats)


if __name__ == "__main__":
    main()
