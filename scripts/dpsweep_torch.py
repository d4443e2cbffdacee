#!/usr/bin/env python3
"""DP-SGD on Fashion-MNIST in PyTorch, many runs at once on a GPU (issue 27 exploration).

An independent re-implementation of what `cmd/train -recipe fashion-mnist-cnn` did with the
tanh CNN (`-model cnn`, batch 4,096, 160 epochs, lr 2, before res-cnn-28 replaced it), to check
the ranking of loss shapes found with the Go code (docs/results/utility.md, "Loss shaping
against the clipping bias"); not the product and not a test. Each run: Poisson sampling
(rate B/n), per-example gradients by torch.func.vmap, flat clipping to C, Gaussian noise
z*C on the sum, divided by B, plain SGD (optional heavy-ball momentum), an EMA of the
parameters with beta_t = min(beta, (1+t)/(10+t)) as -ema, and the EMA's (and the last
iterate's) accuracy on a fixed random 10% validation split of the training images
(numpy RandomState(1) permutation: 54,000 / 6,000). z comes from ZTAB, which holds
`go run ./cmd/privacy noise -n 54000 -batch B -epochs E -epsilon 3 -delta 1e-5
-accountant rdp` for the plans used, or from a config's "z".

Architectures are strings of tokens (as the scratch builder of the utility.md tables):
cF:K:S:P conv, t tanh, r ReLU, s SELU, e ELU, gG GroupNorm, nG GroupNorm without affine,
std per-image standardisation, mK:S[:P] max pool, aK:S[:P] average pool, f flatten,
dN dense; Glorot-uniform weights and zero biases. Losses: ce, ls:EPS, temp:T, focal:G,
thr:P (no gradient once p_y > P), mse:M.

    python3 scripts/dpsweep_torch.py CONFIGS.json WORKER NWORKERS OUT.jsonl [DEADLINE_S]

CONFIGS.json (the 36 of utility.md: dpsweep_torch_i27c.json, 13 of which finished before the deadline: 0–10, 20, 21) is a list of objects (arch, B, E, lr, clip, ema, mom, seed, loss, z); worker W
of N runs configs W, W+N, ...; runs not finished by the deadline are dropped. It reads
train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz from $FMNIST_DIR (default
/usr/share/datasets/fashion-mnist). On an H200, 12 workers at once took about 370 s for a
2,240-step run each.
"""
import gzip, json, math, os, sys, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
try:
    from torch.func import vmap, grad, functional_call
except ImportError:
    from functorch import vmap, grad
    from torch.nn.utils.stateless import functional_call

ZTAB = {(4096,160):5.44252,(2048,40):2.03956,(2048,80):2.76139,(4096,80):3.90536,(8192,320):10.7769,(4096,240):6.6325,(2048,120):3.33017}

class Std(nn.Module):  # per-image standardisation (GroupNorm 1 group, no affine)
    def forward(self, x): return F.group_norm(x, 1)

def build(arch, cin=1, hw=28):
    ls=[]; c=cin
    for tok in arch.split(','):
        if tok=='t': ls.append(nn.Tanh()); continue
        if tok=='r': ls.append(nn.ReLU()); continue
        if tok=='s': ls.append(nn.SELU()); continue
        if tok=='e': ls.append(nn.ELU()); continue
        if tok=='f': ls.append(nn.Flatten()); continue
        if tok=='std': ls.append(Std()); continue
        v=[int(a) for a in tok[1:].split(':')]
        k=tok[0]
        if k=='c': ls.append(nn.Conv2d(c,v[0],v[1],v[2],v[3])); c=v[0]
        elif k=='g': ls.append(nn.GroupNorm(v[0],c))
        elif k=='n': ls.append(nn.GroupNorm(v[0],c,affine=False))
        elif k=='m': ls.append(nn.MaxPool2d(v[0],v[1],v[2] if len(v)>2 else 0))
        elif k=='a': ls.append(nn.AvgPool2d(v[0],v[1],v[2] if len(v)>2 else 0))
        elif k=='d': ls.append(nn.LazyLinear(v[0]))
        else: raise ValueError(tok)
    m=nn.Sequential(*ls)
    m(torch.zeros(1,cin,hw,hw))
    for mod in m:
        if isinstance(mod,(nn.Conv2d,nn.Linear)):
            nn.init.xavier_uniform_(mod.weight); nn.init.zeros_(mod.bias)
    return m

def lossfn(z, y, kind, a):
    if kind=='ce': return F.cross_entropy(z,y)
    if kind=='ls':
        lsm=F.log_softmax(z,-1); return ((1-a)*-lsm.gather(-1,y[:,None])[:,0] - a*lsm.mean(-1)).mean()
    if kind=='temp': return F.cross_entropy(z/a,y)
    if kind=='focal':
        lp=F.log_softmax(z,-1).gather(-1,y[:,None])[:,0]; p=lp.exp()
        return (-(1-p)**a*lp).mean()
    if kind=='thr':
        l=F.cross_entropy(z,y,reduction='none'); keep=(torch.exp(-l)<=a).float().detach()
        return (l*keep).mean()
    if kind=='mse':
        t=F.one_hot(y,z.shape[-1]).float()*a
        return 0.5*((z-t)**2).mean(-1).mean()
    raise ValueError(kind)

def run(cfg, X, Y, Xv, Yv, dev, deadline):
    seed=cfg.get('seed',1); torch.manual_seed(seed); np.random.seed(seed)
    B=cfg.get('B',4096); E=cfg.get('E',160); lr=cfg.get('lr',2.0); C=cfg.get('clip',1.0)
    mom=cfg.get('mom',0.0); beta=cfg.get('ema',0.999); kind,_,a=cfg.get('loss','ce').partition(':'); a=float(a) if a else 0
    z=cfg['z'] if 'z' in cfg else ZTAB[(B,E)]; n=len(X); steps=E*math.ceil(n/B); q=B/n
    m=build(cfg['arch']).to(dev)
    params={k:v.detach() for k,v in m.named_parameters()}
    ema={k:v.clone() for k,v in params.items()}; buf={k:torch.zeros_like(v) for k,v in params.items()}
    def l1(p,x,y): return lossfn(functional_call(m,p,(x[None],)),y[None],kind,a)
    pg=vmap(grad(l1),in_dims=(None,0,0))
    g=torch.Generator(device=dev); g.manual_seed(seed)
    t0=time.time()
    for t in range(steps):
        if time.time()>deadline: return None, t, time.time()-t0
        idx=(torch.rand(n,device=dev,generator=g)<q).nonzero()[:,0]
        s={k:torch.zeros_like(v) for k,v in params.items()}
        for lo in range(0,len(idx),cfg.get('chunk',4096)):
            ii=idx[lo:lo+cfg.get('chunk',4096)]
            gs=pg(params,X[ii],Y[ii])
            nrm=torch.sqrt(sum((v.reshape(len(ii),-1)**2).sum(1) for v in gs.values()))
            f=torch.clamp(C/(nrm+1e-12),max=1.0)
            for k,v in gs.items(): s[k]+=torch.einsum('b,b...->...',f,v)
        bt=min(beta,(1+t)/(10+t))
        for k in params:
            gk=(s[k]+z*C*torch.randn(s[k].shape,device=dev,generator=g))/B
            if mom>0: buf[k]=mom*buf[k]+gk; gk=buf[k]
            params[k]=params[k]-lr*gk
            ema[k]=bt*ema[k]+(1-bt)*params[k] if beta>0 else params[k]
    with torch.no_grad():
        acc=[]
        for p in (ema,params):
            pred=torch.cat([functional_call(m,p,(Xv[i:i+5000],)).argmax(1) for i in range(0,len(Xv),5000)])
            acc.append(float((pred==Yv).float().mean())*100)
    return acc, steps, time.time()-t0

def main():
    cfgs=json.load(open(sys.argv[1])); wid=int(sys.argv[2]); nw=int(sys.argv[3]); out=sys.argv[4]
    deadline=time.time()+float(sys.argv[5]) if len(sys.argv)>5 else 1e18
    dev='cuda' if torch.cuda.is_available() else 'cpu'
    torch.backends.cuda.matmul.allow_tf32=False; torch.backends.cudnn.allow_tf32=False
    d=os.environ.get('FMNIST_DIR','/usr/share/datasets/fashion-mnist')
    Xa=np.frombuffer(gzip.open(d+'/train-images-idx3-ubyte.gz').read(),np.uint8,offset=16).reshape(-1,1,28,28).astype(np.float32)/255
    Ya=np.frombuffer(gzip.open(d+'/train-labels-idx1-ubyte.gz').read(),np.uint8,offset=8).astype(np.int64)
    perm=np.random.RandomState(1).permutation(len(Xa)); v,tr=perm[:6000],perm[6000:]
    lim=int(os.environ.get('SWEEP_NLIM','0')) or None
    X=torch.tensor(Xa[tr][:lim]).to(dev); Y=torch.tensor(Ya[tr][:lim]).to(dev)
    Xv=torch.tensor(Xa[v]).to(dev); Yv=torch.tensor(Ya[v]).to(dev)
    for i,cfg in enumerate(cfgs):
        if i%nw!=wid: continue
        try:
            acc,steps,sec=run(cfg,X,Y,Xv,Yv,dev,deadline)
        except Exception as e:
            acc,steps,sec=None,-1,0; print('ERR',i,cfg,repr(e),flush=True)
        line=json.dumps({'i':i,'cfg':cfg,'acc_ema':acc and acc[0],'acc_last':acc and acc[1],'steps':steps,'sec':round(sec,1)})
        print(line,flush=True)
        with open(out,'a') as fh: fh.write(line+'\n')
        if acc is None and steps>=0: break
main()
