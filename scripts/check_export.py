#!/usr/bin/env python3
"""Check a cmd/export file against cmd/predict: same inputs, same logits.

    go run ./cmd/train -checkpoint m.ckpt
    go run ./cmd/export -checkpoint m.ckpt -o m.safetensors
    go run ./cmd/predict -checkpoint m.ckpt -json digits/ > pred.jsonl
    python3 scripts/check_export.py m.safetensors pred.jsonl

The script builds the torch.nn.Sequential that the file's metadata names ("privtrain.torch",
PyTorch source; CenterCrop, torchvision's CenterCrop of older files and, from
layers/scattering2d_torch.py, Scattering2D are defined here), loads the tensors with load_state_dict (strict), reads
every input that predict named (PNG/JPEG files, "file.csv:N" rows, "idx-file:N" images),
scales it as predict does (pixel v -> v/255; CSV values / --scale), runs the model on NCHW
input and prints the largest absolute difference of the logits and of the probabilities,
and how many predicted classes agree. Exit status 1 if a difference exceeds --tol.

It needs PyTorch (Debian: apt install python3-torch). The safetensors package and Pillow
are used when installed; without them the file is parsed with struct + json and PNGs are
decoded with zlib. --backend python runs the same Sequential semantics in pure Python
instead of PyTorch, built from the stored architecture ("privtrain.architecture": conv,
dense, maxpool, avgpool, globalavgpool, groupnorm, crop, flatten, relu, tanh); slow, but
needs nothing: a check of the layouts without PyTorch. nn's TestCheckExportScript runs
both backends when python3 (and, for the torch one, PyTorch) is installed.
"""

import argparse
import gzip
import json
import math
import struct
import sys
import zlib


def load_safetensors(path):
    """Returns (metadata, {name: (dtype, shape, flat list of floats)}), per the spec."""
    with open(path, "rb") as f:
        b = f.read()
    (n,) = struct.unpack("<Q", b[:8])
    header = json.loads(b[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    data = b[8 + n :]
    tensors = {}
    for name, t in header.items():
        lo, hi = t["data_offsets"]
        fmt = {"F32": "f", "F64": "d"}[t["dtype"]]
        count = (hi - lo) // struct.calcsize(fmt)
        tensors[name] = (t["dtype"], t["shape"], list(struct.unpack("<%d%s" % (count, fmt), data[lo:hi])))
    return meta, tensors


# ---- inputs, read as cmd/predict reads them -------------------------------------------

def png_pixels(path):
    """Decodes an 8-bit, non-interlaced grayscale/RGB(A) PNG: (width, height, channels, bytes)."""
    try:
        from PIL import Image  # Pillow, when installed, reads everything (also JPEG)

        img = Image.open(path)
        mode = "L" if img.mode in ("L", "1", "P", "LA", "I;16") else "RGB"
        img = img.convert(mode)
        return img.width, img.height, len(mode), img.tobytes()
    except ImportError:
        pass
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("%s: not a PNG (install Pillow for JPEG)" % path)
    pos, idat = 8, b""
    while pos < len(b):
        (length,) = struct.unpack(">I", b[pos : pos + 4])
        kind, body = b[pos + 4 : pos + 8], b[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    chans = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or interlace or chans is None:
        raise SystemExit("%s: only 8-bit non-interlaced gray/RGB PNGs without Pillow" % path)
    raw, stride, out, prev = zlib.decompress(idat), w * chans, bytearray(), bytearray(w * chans)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - chans] if i >= chans else 0
            c = prev[i - chans] if i >= chans else 0
            up = prev[i]
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + up) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + up) // 2) & 255
            elif ft == 4:
                p = a + up - c
                pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        out += line
        prev = line
    if chans in (2, 4):  # drop alpha
        keep = chans - 1
        out = bytearray(v for i, v in enumerate(out) if i % chans < keep)
        chans = keep
    return w, h, chans, bytes(out)


def image_input(path, shape):
    C, H, W = shape
    w, h, chans, px = png_pixels(path)
    if (w, h) != (W, H):
        raise SystemExit("%s is %dx%d, the model expects %dx%d" % (path, w, h, W, H))
    x = [0.0] * (C * H * W)
    for i in range(H):
        for j in range(W):
            p = px[(i * W + j) * chans : (i * W + j + 1) * chans]
            if C == 1:
                # Go's color.GrayModel: (19595 R + 38470 G + 7471 B + 2^15) >> 16 on 16-bit values
                if chans == 1:
                    g = p[0]
                else:
                    r, gg, bb = (v * 257 for v in p[:3])
                    g = ((19595 * r + 38470 * gg + 7471 * bb + (1 << 15)) >> 24)
                x[i * W + j] = g / 255
            else:
                for c in range(3):
                    x[(c * H + i) * W + j] = p[c if chans == 3 else 0] / 255
    return x


_cache = {}


def table_input(path, n, shape, scale):
    size = 1
    for s in shape:
        size *= s
    if path not in _cache:
        with open(path, "rb") as f:
            b = f.read()
        if b[:2] == b"\x1f\x8b":
            b = gzip.decompress(b)
        rows = []
        if path.lower().endswith(".csv"):
            for k, line in enumerate(b.decode().splitlines()):
                if not line.strip():
                    continue
                vals = line.split(",")
                try:
                    rows.append([float(v) / scale for v in vals])
                except ValueError:
                    if k != 0:
                        raise
        else:  # IDX3
            count, h, w = struct.unpack(">III", b[4:16])
            rows = [[v / 255 for v in b[16 + i * h * w : 16 + (i + 1) * h * w]] for i in range(count)]
        _cache[path] = rows
    return [float(v) for v in _cache[path][n]]


def read_input(name, shape, scale):
    head, _, tail = name.rpartition(":")
    if head and tail.isdigit() and not name.lower().endswith((".png", ".jpg", ".jpeg")):
        x = table_input(head, int(tail), shape, scale)
    else:
        x = image_input(name, shape)
    # predict hands the model float32 values (v/255 rounded to float32)
    return list(struct.unpack("<%df" % len(x), struct.pack("<%df" % len(x), *x)))


# ---- the model --------------------------------------------------------------------------

def torch_model(meta, tensors):
    """The Sequential that the file's "privtrain.torch" metadata names, built by PyTorch."""
    import torch
    from torch import nn

    class CenterCrop(nn.Module):  # privtrain's crop: offsets floor((H-h)/2), floor((W-w)/2)
        def __init__(self, h, w):
            super().__init__()
            self.h, self.w = h, w

        def forward(self, x):
            top, left = (x.shape[-2] - self.h) // 2, (x.shape[-1] - self.w) // 2
            return x[..., top : top + self.h, left : left + self.w]

    class transforms:  # torchvision's CenterCrop((h, w)) for even margins, where it is ours
        @staticmethod
        def CenterCrop(size):
            return CenterCrop(*size)

    class torchvision:
        pass

    torchvision.transforms = transforms
    # The scattering transform: the class export's Python module defines, from its source.
    import os
    import numpy as np

    scope = {"nn": nn, "torch": torch, "np": np}
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers", "scattering2d_torch.py")
    with open(src) as f:
        exec(f.read(), scope)
    arch = json.loads(meta["privtrain.architecture"])
    model = eval(meta["privtrain.torch"], {"nn": nn, "torch": torch, "CenterCrop": CenterCrop, "torchvision": torchvision,
                                           "Scattering2D": scope["Scattering2D"]})
    dtypes = {"F32": torch.float32, "F64": torch.float64}
    # The model's dtype is its trained tensors'; the scattering's filters are float64 in any model.
    dtype = torch.float64 if all(t[0] == "F64" for t in tensors.values()) else torch.float32
    state = {k: torch.tensor(v, dtype=dtypes[t]).reshape(shp) for k, (t, shp, v) in tensors.items()}
    # The dtype first: load_state_dict copies into the parameters' dtype (float32 by default).
    model.to(dtype).eval()
    for m in model:
        if isinstance(m, scope["Scattering2D"]):
            m.double()  # its filters stay float64; it returns the input's dtype
    model.load_state_dict(state)  # strict: names and shapes must match the Sequential

    def run(xs):
        with torch.no_grad():
            x = torch.tensor(xs, dtype=dtype).reshape([len(xs)] + list(arch["input_shape"]))
            return model(x).double().tolist()

    return run


def python_model(meta, tensors):
    """The same Sequential in pure Python, with PyTorch's semantics (NCHW, weights OIHW and [out, in])."""
    arch = json.loads(meta["privtrain.architecture"])

    def pool(x, shape, s, reduce):
        C, H, W = shape
        (kh, kw), (ph, pw) = s["kernel"], s["padding"]
        sh, sw = [v or s["kernel"][k] for k, v in enumerate(s["stride"])]
        OH, OW = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
        y = [reduce([x[(c * H + rr) * W + qq]
                     for rr in range(r * sh - ph, r * sh - ph + kh) if 0 <= rr < H
                     for qq in range(q * sw - pw, q * sw - pw + kw) if 0 <= qq < W])
             for c in range(C) for r in range(OH) for q in range(OW)]
        return y, [C, OH, OW]

    def forward(x):
        shape, idx = list(arch["input_shape"]), 0
        for i, layer in enumerate(arch["layers"]):
            kind, s = layer.get("type"), layer.get("settings") or {}
            if kind == "conv":
                C, H, W = shape
                F, (kh, kw), (ph, pw) = s["filters"], s["kernel"], s["padding"]
                sh, sw = [v or 1 for v in s["stride"]]
                OH, OW = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
                w = tensors["%d.weight" % i][2]
                b = tensors["%d.bias" % i][2] if not s["no_bias"] else [0.0] * F
                y = [0.0] * (F * OH * OW)
                for o in range(F):
                    for r in range(OH):
                        for q in range(OW):
                            acc = b[o]
                            for c in range(C):
                                for u in range(kh):
                                    rr = r * sh + u - ph
                                    if 0 <= rr < H:
                                        wrow, xrow = ((o * C + c) * kh + u) * kw, (c * H + rr) * W
                                        for v in range(kw):
                                            qq = q * sw + v - pw
                                            if 0 <= qq < W:
                                                acc += w[wrow + v] * x[xrow + qq]
                            y[(o * OH + r) * OW + q] = acc
                x, shape = y, [F, OH, OW]
            elif kind == "maxpool":
                x, shape = pool(x, shape, s, max)
            elif kind == "avgpool":  # count_include_pad=False: the mean of the cells inside
                x, shape = pool(x, shape, s, lambda v: sum(v) / len(v))
            elif kind == "globalavgpool":
                C, H, W = shape
                x, shape = [sum(x[c * H * W : (c + 1) * H * W]) / (H * W) for c in range(C)], [C, 1, 1]
            elif kind == "groupnorm":  # per example, group: (x - mean) / sqrt(var + 1e-5), then gamma, beta
                C, H, W = shape
                per, y = C // s["groups"] * H * W, []
                for g in range(s["groups"]):
                    part = x[g * per : (g + 1) * per]
                    mean = sum(part) / per
                    var = sum((v - mean) ** 2 for v in part) / per
                    y += [(v - mean) / math.sqrt(var + 1e-5) for v in part]
                if not s["no_affine"]:
                    gamma, beta = tensors["%d.weight" % i][2], tensors["%d.bias" % i][2]
                    y = [gamma[k // (H * W)] * v + beta[k // (H * W)] for k, v in enumerate(y)]
                x = y
            elif kind == "crop":
                C, H, W = shape
                t, l = (H - s["height"]) // 2, (W - s["width"]) // 2
                x = [x[(c * H + t + r) * W + l + q] for c in range(C) for r in range(s["height"]) for q in range(s["width"])]
                shape = [C, s["height"], s["width"]]
            elif kind == "flatten":
                shape = [len(x)]
            elif kind == "dense":
                n, out = shape[0], s["units"]
                w = tensors["%d.weight" % i][2]
                b = tensors["%d.bias" % i][2] if not s["no_bias"] else [0.0] * out
                x = [b[o] + sum(w[o * n + k] * x[k] for k in range(n)) for o in range(out)]
                shape = [out]
            elif kind == "relu":
                x = [max(v, 0.0) for v in x]
            elif kind == "tanh":
                x = [math.tanh(v) for v in x]
            else:
                raise SystemExit("layer type %r unknown" % kind)
        return x

    return lambda xs: [forward(x) for x in xs]


def softmax(z):
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("export", help="the .safetensors file written by cmd/export")
    ap.add_argument("predictions", help="the output of cmd/predict -json on the same checkpoint")
    ap.add_argument("--scale", type=float, default=1.0, help="the -scale given to predict for CSV inputs")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest allowed logit difference (float32: 1e-4)")
    ap.add_argument("--backend", choices=("torch", "python"), default="torch")
    args = ap.parse_args()

    meta, tensors = load_safetensors(args.export)
    arch = json.loads(meta["privtrain.architecture"])
    build = torch_model if args.backend == "torch" else python_model
    model = build(meta, tensors)
    with open(args.predictions) as f:
        preds = [json.loads(line) for line in f if line.strip()]
    xs = [read_input(p["input"], arch["input_shape"], args.scale) for p in preds]
    ours = model(xs)
    dz = max(abs(a - b) for p, z in zip(preds, ours) for a, b in zip(p["logits"], z))
    dp = max(abs(a - b) for p, z in zip(preds, ours) for a, b in zip(p["probabilities"], softmax(z)))
    agree = sum(p["class"] == max(range(len(z)), key=z.__getitem__) for p, z in zip(preds, ours))
    print("%d inputs (%s backend): max |logit difference| %.3g, max |probability difference| %.3g, classes agree on %d of %d"
          % (len(preds), args.backend, dz, dp, agree, len(preds)))
    sys.exit(0 if dz <= args.tol and agree == len(preds) else 1)


if __name__ == "__main__":
    main()
