#!/usr/bin/env python3
"""Probe DP-SGD on cached ScatterNet features outside privtrain (issue 14's Fashion-MNIST target).

An independent PyTorch implementation of DP-SGD on the features that cmd/train's
-feature-cache stores for -model scatter-linear (the scattering J=2, L=8 and its GroupNorm
in 27 groups, flattened to 3,969 values per image), used to try, quickly and outside the
product, changes that might lift `-recipe fashion-mnist-scatter` above 90 %. Every probe
tunes on a validation split of the training set (50,000 / 10,000, a random permutation with
--split-seed) and prints validation accuracy; none reads the test set unless --test is given.

    go run ./cmd/train -recipe fashion-mnist-scatter -epochs 1 -feature-cache /tmp/fc
    python3 scripts/scatter_probe.py --cache /tmp/fc base center standardize pca ceiling
    # flip: the features of the mirrored images, cached the same way
    python3 scripts/scatter_probe.py --write-flipped /tmp/fmnist-flip
    go run ./cmd/train -dataset fashion-mnist -data /tmp/fmnist-flip -model scatter-linear -epochs 1 -feature-cache /tmp/fcflip
    python3 scripts/scatter_probe.py --cache /tmp/fc --flip-cache /tmp/fcflip flip
    # whiten, prior: a prior from a random process (dead leaves), which sees no private data
    python3 scripts/scatter_probe.py --write-dead-leaves /tmp/deadleaves
    go run ./cmd/train -dataset fashion-mnist -data /tmp/deadleaves -model scatter-linear -epochs 1 -feature-cache /tmp/fcdl
    python3 scripts/scatter_probe.py --cache /tmp/fc --prior-cache /tmp/fcdl whiten prior

Probes (each one DP-SGD run of the recipe's plan unless it says otherwise: batch 16,384,
Poisson sampling, 120 epochs = 480 steps at n = 50,000, lr 8, momentum 0.9, flat clipping
C = 0.1 of the whole per-example gradient, noise calibrated for ε = 3, δ = 1e-5 by RDP):
  base         the recipe as it is (reproduces cmd/train's validation accuracy within seed noise)
  center       features minus their per-channel mean (81 channels over images and the 7×7
               positions; the cache is in HWC order; the exact mean: an upper
               bound for a privately estimated one, which would cost budget)
  standardize  per-channel mean and variance, exact (same caveat)
  clip         C = 0.02, 1, 5 and 20 with lr 40, 0.8, 0.16 and 0.04 (the same C·lr; per-example
               norms are about 50·‖p − y‖, so C = 20 leaves well-fitted examples unclipped)
  pca          DP-PCA (Gaussian noise on XᵀX of rows clipped to norm 1, σ = 10, its RDP
               composed with DP-SGD's), top k = 64 or 256 directions, whitened
  flip         augmentation multiplicity with 2 views, the image and its mirror image: the
               example's gradient is the mean over both views before clipping (De et al.
               2022); also test-time averaging of both views
  ceiling      the recipe without noise (clipping only), and non-private full-batch Adam
  whiten       the features multiplied by (C + f·λ₁I)^(-1/2) in C's eigenbasis, C the covariance
               of the features of 70,000 dead-leaves images (--prior-cache), λ₁ its largest
               eigenvalue, f = --floor; optionally only the top --components directions;
               scaled so that the dead-leaves features keep their mean norm. The images come
               from a random process (--write-dead-leaves), so the map is a prior that sees
               no private data.
  prior        a conv network on the features (1×1 conv 81→64, GroupNorm, ReLU, 3×3 conv,
               GroupNorm, ReLU) trained with SimCLR's InfoNCE loss on pairs of views of the
               same dead-leaves scene (--prior-cache), frozen, 2×2-average-pooled; DP-SGD on
               its 576 outputs alone and on them beside the 3,969 features
  With --seeds S,S,… a probe runs once per DP-SGD seed (whiten, prior, base).

Needs PyTorch (Debian: apt install python3-torch) and numpy. The RDP here is the
integer-order bound of Mironov et al. (orders 2…256) with the Balle et al. conversion; it
calibrates within 0.3 % of privtrain's accountant (which adds fractional orders).
"""

import argparse
import glob
import gzip
import math
import os
import shutil
import sys
import time

import numpy as np
import torch

DIM = 3969  # 81 scattering channels × 7 × 7
FMNIST = "/usr/share/datasets/fashion-mnist"
ORDERS = list(range(2, 257))


# ---- RDP of the Poisson-subsampled Gaussian (integer orders) ----

def _logsumexp(t):
    m = max(t)
    return m + math.log(sum(math.exp(x - m) for x in t))


def rdp_step(q, sigma, a):
    """RDP at integer order a of one step of the subsampled Gaussian (Mironov et al. 2019)."""
    if q == 1.0:
        return a / (2 * sigma * sigma)
    terms = [math.lgamma(a + 1) - math.lgamma(i + 1) - math.lgamma(a - i + 1)
             + i * math.log(q) + (a - i) * math.log1p(-q) + (i * i - i) / (2 * sigma * sigma)
             for i in range(a + 1)]
    return _logsumexp(terms) / (a - 1)


def epsilon(rdp, delta):
    return min(r + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)
               for a, r in zip(ORDERS, rdp))


def calibrate(q, steps, target, delta=1e-5, extra=None):
    lo, hi = 0.3, 200.0
    for _ in range(50):
        m = (lo + hi) / 2
        rdp = [steps * rdp_step(q, m, a) + (extra[i] if extra else 0.0) for i, a in enumerate(ORDERS)]
        if epsilon(rdp, delta) > target:
            lo = m
        else:
            hi = m
    return hi


# ---- data ----

def read_features(cache, n):
    """The float32 features of n examples from a privtrain feature cache file (training/featurefile.go)."""
    found = []
    for p in sorted(glob.glob(os.path.join(cache, "*.features"))):
        with open(p, "rb") as f:
            head = f.read(64)
        count = int.from_bytes(head[48:56], "little")
        ndim = int.from_bytes(head[56:60], "little")
        dims = int.from_bytes(head[60:64], "little")
        if head[:8] == b"PTFEATS\n" and count == n and ndim == 1 and dims == DIM:
            found.append(p)
    if len(found) != 1:
        sys.exit(f"{len(found)} cache files of {n} × {DIM} features in {cache}, want 1: give a directory with the cache of one "
                 f"cmd/train -recipe fashion-mnist-scatter run on the whole data set")
    a = np.fromfile(found[0], dtype=np.float32, offset=64, count=n * DIM)
    return torch.from_numpy(a.reshape(n, DIM).copy())


def read_labels(part):
    with gzip.open(os.path.join(FMNIST, part + "-labels-idx1-ubyte.gz")) as f:
        return torch.from_numpy(np.frombuffer(f.read()[8:], np.uint8).astype(np.int64))


def write_flipped(out):
    os.makedirs(out, exist_ok=True)
    for part in ["train", "t10k"]:
        with gzip.open(os.path.join(FMNIST, part + "-images-idx3-ubyte.gz")) as f:
            b = f.read()
        a = np.frombuffer(b[16:], np.uint8).reshape(-1, 28, 28)[:, :, ::-1]
        with gzip.open(os.path.join(out, part + "-images-idx3-ubyte.gz"), "wb") as f:
            f.write(b[:16] + a.tobytes())
        shutil.copy(os.path.join(FMNIST, part + "-labels-idx1-ubyte.gz"), out)


# ---- DP-SGD on a linear softmax model ----

def accuracy(model, evals, yv):
    """Accuracy in % of model = (W, b) on the validation examples, whose softmax outputs
    are averaged over the view sets in evals."""
    W, b = model
    prob = sum(torch.softmax(v @ W + b, 1) for v in evals)
    return (prob.argmax(1) == yv).float().mean().item() * 100


def train(views, y, sigma, seed, batch=16384, epochs=120, lr=8.0, mom=0.9, clip=0.1):
    """DP-SGD of W, b on K views of each example: the per-example gradient is the mean
    over its views, clipped to norm clip as a whole, and the noise z·clip is added to the
    sum of a Poisson batch of expected size batch."""
    g = torch.Generator().manual_seed(seed)
    n, dim = views[0].shape
    K = len(views)
    W = torch.zeros(dim, 10)
    b = torch.zeros(10)
    vW, vb = torch.zeros_like(W), torch.zeros_like(b)
    Y = torch.nn.functional.one_hot(y, 10).float()
    gram = [[(views[i] * views[j]).sum(1) + 1 for j in range(K)] for i in range(K)]
    q, steps = batch / n, epochs * math.ceil(n / batch)
    for _ in range(steps):
        idx = (torch.rand(n, generator=g) < q).nonzero().squeeze(1)
        P = [torch.softmax(v[idx] @ W + b, 1) - Y[idx] for v in views]
        sq = sum((P[i] * P[j]).sum(1) * gram[i][j][idx] for i in range(K) for j in range(K)) / (K * K)
        c = torch.clamp(clip / (torch.sqrt(torch.clamp(sq, min=0)) + 1e-12), max=1.0)
        Pc = [p * (c / K)[:, None] for p in P]
        gW = sum(v[idx].T @ p for v, p in zip(views, Pc)) + sigma * clip * torch.randn(dim, 10, generator=g)
        gb = sum(p.sum(0) for p in Pc) + sigma * clip * torch.randn(10, generator=g)
        vW = mom * vW + gW / batch
        vb = mom * vb + gb / batch
        W -= lr * vW
        b -= lr * vb
    return W, b


def train1(A, y, sigma, seed, batch=16384, epochs=120, lr=8.0, mom=0.9, clip=0.1):
    """train with one view, on the whole matrix and a 0/1 sampling mask instead of a gather
    of the batch's rows (which costs more than the products here); the same algorithm and
    the same draws from the generator as train."""
    g = torch.Generator().manual_seed(seed)
    n, dim = A.shape
    W, b = torch.zeros(dim, 10), torch.zeros(10)
    vW, vb = torch.zeros_like(W), torch.zeros_like(b)
    Y = torch.nn.functional.one_hot(y, 10).float()
    sqx = (A * A).sum(1) + 1
    q, steps = batch / n, epochs * math.ceil(n / batch)
    for _ in range(steps):
        m = (torch.rand(n, generator=g) < q).float()
        P = torch.softmax(A @ W + b, 1) - Y
        c = torch.clamp(clip / (torch.sqrt((P * P).sum(1) * sqx) + 1e-12), max=1.0) * m
        Pc = P * c[:, None]
        gW = A.T @ Pc + sigma * clip * torch.randn(dim, 10, generator=g)
        gb = Pc.sum(0) + sigma * clip * torch.randn(10, generator=g)
        vW = mom * vW + gW / batch
        vb = mom * vb + gb / batch
        W -= lr * vW
        b -= lr * vb
    return W, b


def dpsgd(views, y, evals, yv, sigma, seed, **kw):
    if len(views) == 1:
        return accuracy(train1(views[0], y, sigma, seed, **kw), evals, yv)
    return accuracy(train(views, y, sigma, seed, **kw), evals, yv)


# ---- a prior from a random process: dead leaves (Lee, Mumford & Huang 2001) ----

def write_dead_leaves(out, scenes=35000, seed=1, size=28, shapes=48):
    """Write 2·scenes images in the Fashion-MNIST file layout (60,000 + 10,000 for the
    default 35,000 scenes): view 1 of every scene, then view 2. A scene is a dead-leaves
    picture: 48 discs, rectangles and ellipses of uniform grey levels on a uniform
    background, each occluding the ones before, radii from a power law (density ∝ r⁻³ on
    [1, 16] pixels, the model's scale invariance), centres anywhere within 4 pixels of the
    frame. A view renders the scene under its own random scale (0.8–1.25), shift (±3 pixels),
    mirror image (p = ½) and contrast and brightness (gain 0.6–1.4, offset ±0.2). The labels
    are placeholders (cmd/train needs a label file); nothing here reads real data."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    u = rng.random((scenes, shapes))
    rmin, rmax = 1.0, 16.0
    r = 1 / np.sqrt(1 / rmin ** 2 - u * (1 / rmin ** 2 - 1 / rmax ** 2))
    cx = rng.uniform(-4, size + 4, (scenes, shapes))
    cy = rng.uniform(-4, size + 4, (scenes, shapes))
    kind = rng.integers(0, 3, (scenes, shapes))
    ang = rng.uniform(0, np.pi, (scenes, shapes))
    asp = rng.uniform(0.3, 1.0, (scenes, shapes))
    val = rng.random((scenes, shapes)).astype(np.float32)
    bg = rng.random(scenes).astype(np.float32)

    def render(chunk=5000):
        s = rng.uniform(0.8, 1.25, scenes)[:, None]
        tx = rng.uniform(-3, 3, scenes)[:, None]
        ty = rng.uniform(-3, 3, scenes)[:, None]
        flip = rng.random(scenes) < 0.5
        c = size / 2 - 0.5
        cx2, cy2, r2 = (cx - c) * s + c + tx, (cy - c) * s + c + ty, r * s
        cx2 = np.where(flip[:, None], 2 * c - cx2, cx2)
        ang2 = np.where(flip[:, None], np.pi - ang, ang)
        img = np.empty((scenes, size, size), np.float32)
        for a in range(0, scenes, chunk):
            e = min(scenes, a + chunk)
            im = np.broadcast_to(bg[a:e, None, None], (e - a, size, size)).copy()
            for k in range(shapes):
                dx = xx[None] - cx2[a:e, k, None, None]
                dy = yy[None] - cy2[a:e, k, None, None]
                ca, sa = np.cos(ang2[a:e, k])[:, None, None], np.sin(ang2[a:e, k])[:, None, None]
                pu, pv = dx * ca + dy * sa, -dx * sa + dy * ca
                rr, aa, kd = r2[a:e, k, None, None], asp[a:e, k, None, None], kind[a:e, k, None, None]
                m = np.where(kd == 0, dx * dx + dy * dy < rr * rr,
                             np.where(kd == 1, (np.abs(pu) < rr) & (np.abs(pv) < rr * aa),
                                      (pu / rr) ** 2 + (pv / (rr * aa)) ** 2 < 1))
                im = np.where(m, val[a:e, k, None, None], im)
            img[a:e] = im
        gain = rng.uniform(0.6, 1.4, scenes)[:, None, None]
        off = rng.uniform(-0.2, 0.2, scenes)[:, None, None]
        return (np.clip((img - 0.5) * gain + 0.5 + off, 0, 1) * 255 + 0.5).astype(np.uint8)

    views = np.concatenate([render(), render()])
    ntr = len(views) * 6 // 7
    os.makedirs(out, exist_ok=True)

    def idx(name, magic, arr):
        with gzip.open(os.path.join(out, name), "wb", compresslevel=1) as f:
            f.write(magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in arr.shape) + arr.tobytes())
    labels = np.arange(len(views), dtype=np.uint8) % 10
    idx("train-images-idx3-ubyte.gz", 2051, views[:ntr])
    idx("t10k-images-idx3-ubyte.gz", 2051, views[ntr:])
    idx("train-labels-idx1-ubyte.gz", 2049, labels[:ntr])
    idx("t10k-labels-idx1-ubyte.gz", 2049, labels[ntr:])


def read_prior(cache):
    """The features of the dead-leaves images: views 1 then views 2 of every scene."""
    return torch.cat([read_features(cache, 60000), read_features(cache, 10000)])


def whitening(P, floors, k):
    """For each floor f of floors, (f, the map x ↦ s·x·V_k·diag(λ_k + f·λ₁)^(-1/2)) of the
    eigen-decomposition of the covariance of the rows of P (made once for all floors), s
    such that P's rows keep their mean norm: computed from the prior's images alone, so it
    sees no private data."""
    D = P.double()
    D = D - D.mean(0)
    ev, V = torch.linalg.eigh(D.T @ D / D.shape[0])
    ev, V = ev.flip(0)[:k], V.flip(1)[:, :k]
    norm = P.norm(dim=1).mean()
    for f in floors:
        M = (V / torch.sqrt(ev + f * ev[0])).float()
        yield f, M * (norm / (P @ M).norm(dim=1).mean())


class PriorNet(torch.nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(81, width, 1), torch.nn.GroupNorm(8, width), torch.nn.ReLU(),
            torch.nn.Conv2d(width, width, 3, padding=1), torch.nn.GroupNorm(8, width), torch.nn.ReLU())
        self.head = torch.nn.Sequential(torch.nn.Linear(width, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


def nchw(F):
    return F.view(-1, 7, 7, 81).permute(0, 3, 1, 2)


def contrastive_prior(P, epochs=8, batch=512, temperature=0.2, seed=0):
    """PriorNet's body trained by InfoNCE on the pairs (view 1, view 2) of every scene."""
    torch.manual_seed(seed)
    V = nchw(P).contiguous()
    pairs = len(V) // 2
    f = PriorNet()
    opt = torch.optim.Adam(f.parameters(), lr=1e-3)
    steps = epochs * (pairs // batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    target = torch.cat([torch.arange(batch) + batch, torch.arange(batch)])
    for ep in range(epochs):
        perm, total = torch.randperm(pairs), 0.0
        for k in range(pairs // batch):
            i = perm[k * batch:(k + 1) * batch]
            z = torch.nn.functional.normalize(f(torch.cat([V[i], V[i + pairs]])), dim=1)
            sim = z @ z.T / temperature
            sim.fill_diagonal_(-1e9)
            loss = torch.nn.functional.cross_entropy(sim, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        print(f"  prior epoch {ep + 1}/{epochs}: InfoNCE {total / (pairs // batch):.4f}", flush=True)
    return f.body.eval()


def prior_features(body, X):
    """The frozen body's output, 2×2-average-pooled to 64×3×3, each row centred and scaled
    to mean square 1."""
    out = []
    with torch.no_grad():
        for a in range(0, len(X), 5000):
            h = torch.nn.functional.avg_pool2d(body(nchw(X[a:a + 5000])), 2, 2).flatten(1)
            h = h - h.mean(1, keepdim=True)
            out.append(h / (h.pow(2).mean(1, keepdim=True).sqrt() + 1e-6))
    return torch.cat(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("probes", nargs="*")
    ap.add_argument("--cache", help="feature cache directory of -model scatter-linear on fashion-mnist")
    ap.add_argument("--flip-cache", help="the same for the mirrored images (probe flip)")
    ap.add_argument("--write-flipped", metavar="DIR", help="write Fashion-MNIST with every image mirrored to DIR and exit")
    ap.add_argument("--write-dead-leaves", metavar="DIR", help="write 70,000 dead-leaves images (35,000 scenes, two views each) to DIR and exit")
    ap.add_argument("--prior-cache", help="feature cache directory of -model scatter-linear on the --write-dead-leaves images (probes whiten, prior)")
    ap.add_argument("--floor", default="0.001", help="whiten: comma-separated floors f of the eigenvalues, in units of the largest")
    ap.add_argument("--components", type=int, default=DIM, help="whiten: keep this many leading directions")
    ap.add_argument("--seeds", help="comma-separated DP-SGD seeds for probes base, whiten and prior (default --seed)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--split-seed", type=int, default=7)
    ap.add_argument("--epsilon", type=float, default=3.0)
    ap.add_argument("--test", action="store_true", help="train on all 60,000 and evaluate on the test set (probe base, or whiten alone)")
    a = ap.parse_args()
    if a.write_flipped:
        write_flipped(a.write_flipped)
        return
    if a.write_dead_leaves:
        write_dead_leaves(a.write_dead_leaves)
        return
    if not a.cache:
        ap.error("--cache is required")
    torch.set_num_threads(os.cpu_count() or 1)
    X, y = read_features(a.cache, 60000), read_labels("train")
    # GroupNorm in 27 groups of 3 neighbouring channels over the 49 positions: every
    # group of every image has mean 0 in the HWC layout; anything else is not this cache.
    gm = X[:100].view(-1, 49, 27, 3).mean((1, 3)).abs().max().item()
    if gm > 1e-4:
        sys.exit(f"{a.cache}: the features are not scatter-linear's GroupNorm output in HWC layout (group mean {gm:.3g})")
    seeds = [int(v) for v in a.seeds.split(",")] if a.seeds else [a.seed]
    floors = [float(v) for v in a.floor.split(",")]
    if a.test:
        Xt, yt = read_features(a.cache, 10000), read_labels("t10k")
        s = calibrate(16384 / 60000, 480, a.epsilon)
        maps = [("base", None)]
        if a.probes == ["whiten"]:
            if not a.prior_cache:
                ap.error("whiten needs --prior-cache")
            maps = ((f"whiten floor {f} k {a.components}", M) for f, M in whitening(read_prior(a.prior_cache), floors, a.components))
        elif a.probes not in ([], ["base"]):
            ap.error("--test runs probe base or whiten alone")
        for name, M in maps:
            A, B = (X, Xt) if M is None else (X @ M, Xt @ M)
            for sd in seeds:
                print(f"test {name} seed {sd} z={s:.4f} acc={dpsgd([A], y, [B], yt, s, sd):.2f}", flush=True)
        return
    perm = torch.randperm(60000, generator=torch.Generator().manual_seed(a.split_seed))
    tr, va = perm[:50000], perm[50000:]
    Xa, ya, Xv, yv = X[tr], y[tr], X[va], y[va]
    n = 50000
    q, steps = 16384 / n, 120 * math.ceil(n / 16384)
    z = calibrate(q, steps, a.epsilon)
    print(f"validation split: 50,000 / 10,000 (split seed {a.split_seed}); z = {z:.4f} for ε = {a.epsilon}", flush=True)

    def report(name, acc, t0):
        print(f"{name}: validation {acc:.2f} % ({time.time() - t0:.0f} s)", flush=True)

    def per_channel(center, std):
        # The cache holds the engine's layout: 7×7 positions, each with its 81 channels
        # (HWC), as GroupNorm's per-group zero means confirm.
        A3 = Xa.view(-1, 49, 81)
        mu, var = A3.mean((0, 1)), A3.var((0, 1))

        def tf(A):
            A3 = A.view(-1, 49, 81)
            if center:
                A3 = A3 - mu
            if std:
                A3 = A3 / torch.sqrt(var + 1e-5)
            return A3.reshape(-1, DIM)
        return tf

    prior = None  # the dead-leaves features, read once for probes whiten and prior
    for p in a.probes:
        t0 = time.time()
        if p == "base":
            for sd in seeds:
                report(f"base seed {sd}", dpsgd([Xa], ya, [Xv], yv, z, sd), t0)
                t0 = time.time()
        elif p in ("whiten", "prior"):
            if not a.prior_cache:
                ap.error(f"probe {p} needs --prior-cache")
            if prior is None:
                prior = read_prior(a.prior_cache)
            P = prior
            if p == "whiten":
                for fl, M in whitening(P, floors, a.components):
                    A, B = Xa @ M, Xv @ M
                    print(f"whiten floor {fl}: mean row norm {Xa.norm(dim=1).mean():.2f} → {A.norm(dim=1).mean():.2f}", flush=True)
                    for sd in seeds:
                        report(f"whiten floor {fl} k {a.components} seed {sd}", dpsgd([A], ya, [B], yv, z, sd), t0)
                        t0 = time.time()
            else:
                body = contrastive_prior(P)
                H = prior_features(body, X)
                for sd in seeds:
                    report(f"prior alone seed {sd}", dpsgd([H[tr]], ya, [H[va]], yv, z, sd), t0)
                    t0 = time.time()
                    both = torch.cat([X, H], 1)
                    report(f"prior beside the features seed {sd}", dpsgd([both[tr]], ya, [both[va]], yv, z, sd), t0)
                    t0 = time.time()
        elif p in ("center", "standardize"):
            tf = per_channel(True, p == "standardize")
            report(p, dpsgd([tf(Xa)], ya, [tf(Xv)], yv, z, a.seed), t0)
        elif p == "clip":
            for clip, lr in [(1.0, 0.8), (0.02, 40.0), (5.0, 0.16), (20.0, 0.04)]:
                report(f"clip C={clip} lr={lr}", dpsgd([Xa], ya, [Xv], yv, z, a.seed, clip=clip, lr=lr), t0)
                t0 = time.time()
        elif p == "pca":
            sp = 10.0
            Xs, Vs = Xa / 63, Xv / 63  # rows of norm 0.6–0.85 < 1 after GroupNorm (√3969 = 63)
            Xs = Xs / torch.clamp(Xs.norm(dim=1, keepdim=True), min=1.0)
            C = Xs.T.double() @ Xs.double()
            E = torch.randn(DIM, DIM, generator=torch.Generator().manual_seed(a.seed + 1000), dtype=torch.float64) * sp
            E = torch.triu(E)
            ev, V = torch.linalg.eigh(C + E + torch.triu(E, 1).T)
            ev, V = ev.flip(0), V.flip(1)
            zp = calibrate(q, steps, a.epsilon, extra=[o / (2 * sp * sp) for o in ORDERS])
            for k in (64, 256):
                scale = torch.sqrt(torch.clamp(ev[:k].float(), min=sp) / n) * math.sqrt(k)
                Vk = V[:, :k].float()
                A, B = (Xs @ Vk) / scale, (Vs @ Vk) / scale
                for lr in (2.0, 8.0, 32.0):
                    report(f"pca σ={sp} k={k} z={zp:.3f} clip 1 lr {lr}", dpsgd([A], ya, [B], yv, zp, a.seed, clip=1.0, lr=lr), t0)
                    t0 = time.time()
        elif p == "flip":
            if not a.flip_cache:
                ap.error("probe flip needs --flip-cache")
            XF = read_features(a.flip_cache, 60000)
            m = train([Xa, XF[tr]], ya, z, a.seed)
            report("flip (2 views), evaluated on the images", accuracy(m, [Xv], yv), t0)
            report("flip (2 views), evaluated on both views", accuracy(m, [Xv, XF[va]], yv), t0)
        elif p == "ceiling":
            report("clipping only (z = 0)", dpsgd([Xa], ya, [Xv], yv, 0.0, a.seed), t0)
            t0 = time.time()
            W = torch.zeros(DIM, 10, requires_grad=True)
            b = torch.zeros(10, requires_grad=True)
            opt = torch.optim.Adam([W, b], lr=0.003)
            for it in range(250):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(Xa @ W + b, ya).backward()
                opt.step()
            with torch.no_grad():
                report("non-private, 250 full-batch Adam steps", ((Xv @ W + b).argmax(1) == yv).float().mean().item() * 100, t0)
        else:
            ap.error(f"unknown probe {p}")


if __name__ == "__main__":
    main()
