#!/usr/bin/env python3
"""Per-example gradient norms of the tanh CNN, fashion-mnist-cnn's network until res-cnn-28 (issue 27).

A diagnostic outside the product, to see where the clipping bias of
docs/results/utility.md ("Where the plateau comes from") comes from. It trains the
recipe's tanh CNN (models.MNISTCNN: conv 16 8x8/2, maxpool 2/1, conv 32 4x4/2, maxpool
2/1, dense 32, dense 10, Glorot-uniform weights, zero biases) with plain SGD, with no
clipping and no noise (lr 0.3, batch 2,048, as the run i27b_old_nonoise_noclip), on the
Debian Fashion-MNIST training set, and at a few steps prints the distribution of the
per-example gradient norms (functorch vmap over 3,000 fixed random training examples):
the whole gradient's median and upper quantiles, the share above C = 1 and above 10, each
layer's median and 99th percentile, and the medians of correctly and wrongly classified
examples. Not private (nothing here is), not a test; about 10 minutes on one core.

    /usr/bin/python3 scripts/gradnorms.py        # Debian python3-torch (functorch)
"""
import gzip, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from functorch import make_functional, vmap, grad
torch.manual_seed(1); np.random.seed(1); torch.set_num_threads(1)
d = "/usr/share/datasets/fashion-mnist/"
X=np.frombuffer(gzip.open(d+'train-images-idx3-ubyte.gz').read(),np.uint8,offset=16).reshape(-1,1,28,28).astype(np.float32)/255
Y=np.frombuffer(gzip.open(d+'train-labels-idx1-ubyte.gz').read(),np.uint8,offset=8).astype(np.int64)
X=torch.tensor(X); Y=torch.tensor(Y)
m=nn.Sequential(nn.Conv2d(1,16,8,2,3),nn.Tanh(),nn.MaxPool2d(2,1),nn.Conv2d(16,32,4,2),nn.Tanh(),nn.MaxPool2d(2,1),
                nn.Flatten(),nn.Linear(512,32),nn.Tanh(),nn.Linear(32,10))
for mod in m:
    if isinstance(mod,(nn.Conv2d,nn.Linear)): nn.init.xavier_uniform_(mod.weight); nn.init.zeros_(mod.bias)
fm,params=make_functional(m)
def loss1(p,x,y): return F.cross_entropy(fm(p,x.unsqueeze(0)),y.unsqueeze(0))
pg=vmap(grad(loss1),in_dims=(None,0,0))
names=['conv1','conv2','dense1','dense2']
probe=torch.randperm(60000)[:3000]
def report(step):
    with torch.no_grad():
        logits=fm(params,X[probe]); pred=logits.argmax(1); ok=(pred==Y[probe])
    gs=pg(params,X[probe],Y[probe])
    per=[torch.sqrt(sum((g.reshape(len(probe),-1)**2).sum(1) for g in gs[2*i:2*i+2])) for i in range(4)]
    tot=torch.sqrt(sum(p**2 for p in per))
    q=lambda t,a: float(torch.quantile(t,a))
    print(f"step {step}: acc {100*ok.float().mean():.1f}%  total norm median {q(tot,.5):.3f} p90 {q(tot,.9):.3f} p99 {q(tot,.99):.3f} max {float(tot.max()):.2f}; "
          f"share of >C=1 {100*float((tot>1).float().mean()):.1f}%, >10 {100*float((tot>10).float().mean()):.2f}%")
    print("   median per layer", ' '.join(f"{n} {q(p,.5):.3f}" for n,p in zip(names,per)), "| p99 per layer", ' '.join(f"{n} {q(p,.99):.2f}" for n,p in zip(names,per)))
    print("   median norm correct %.3f wrong %.3f; wrong share of sum of norms %.0f%%; top-1%% examples' share %.0f%%" % (
        q(tot[ok],.5), q(tot[~ok],.5) if (~ok).any() else 0, 100*float(tot[~ok].sum()/tot.sum()),
        100*float(tot.sort(descending=True).values[:30].sum()/tot.sum())))
opt_lr=0.3; B=2048; n=60000
for step in range(1081):
    if step in (0,50,200,500,1080): report(step)
    idx=torch.randint(0,n,(B,))
    out=fm(params,X[idx]); l=F.cross_entropy(out,Y[idx])
    gr=torch.autograd.grad(l,params)
    with torch.no_grad():
        for p,g in zip(params,gr): p-=opt_lr*g
