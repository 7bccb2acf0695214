"""layer_norm, rms_norm and embedding forward and forward + backward against PyTorch CUDA, with a check of the
values first (a diagnostic, not a benchmark table). Run on the GPU machine: python3 benchmarks/norm_pieces.py"""
import sys, numpy as np, torch, vkt
sys.path.insert(0, "benchmarks")
from bench import timed
vs, ts = vkt.vulkan.synchronize, torch.cuda.synchronize
rng = np.random.default_rng(0)
N, D = 8192, 1024
arrs = [rng.standard_normal(s).astype(np.float32) for s in ((N, D), (D,), (D,), (N, D))]
x, w, b = (vkt.tensor(a, device="vulkan", requires_grad=True) for a in arrs[:3])
g = vkt.tensor(arrs[3], device="vulkan")
tx, tw, tb = (torch.from_numpy(a).cuda().requires_grad_() for a in arrs[:3])
tg = torch.from_numpy(arrs[3]).cuda()
def clear(*ps):
    for q in ps: q.grad = None
res = {}
def p(label, f, sync, reps=50):
    t = timed(f, sync, reps); res[label] = t
    print(f"{label:40s} {t*1e3:8.4f} ms", flush=True)
# correctness first
y = vkt.layer_norm(x, [D], w, b); y.backward(g)
ty = torch.layer_norm(tx, [D], tw, tb); ty.backward(tg)
for a, r in [(y, ty), (x.grad, tx.grad), (w.grad, tw.grad), (b.grad, tb.grad)]:
    print("max err", float(np.abs(a.detach().cpu().numpy() - r.detach().cpu().numpy()).max()))
print("fallbacks", vkt.vulkan.fallback_stats())
for kind in ["layer_norm", "rms_norm"]:
    va = (w, b) if kind == "layer_norm" else (w,)
    ta = (tw, tb) if kind == "layer_norm" else (tw,)
    vf, tf = getattr(vkt, kind), getattr(torch, kind)
    with vkt.no_grad():
        p(f"vkt {kind} fwd", lambda: vf(x, [D], *va), vs)
    with torch.no_grad():
        p(f"torch {kind} fwd", lambda: tf(tx, [D], *ta), ts)
    p(f"vkt {kind} fwd+bwd", lambda: (clear(x, *va), vf(x, [D], *va).backward(g)), vs)
    p(f"torch {kind} fwd+bwd", lambda: (clear(tx, *ta), tf(tx, [D], *ta).backward(tg)), ts)
    p(f"vkt {kind} fwd+bwd sum()", lambda: (clear(x, *va), vf(x, [D], *va).sum().backward()), vs)
    p(f"torch {kind} fwd+bwd sum()", lambda: (clear(tx, *ta), tf(tx, [D], *ta).sum().backward()), ts)
    print(f"ratio {kind} fwd+bwd (torch/vkt): {res[f'torch {kind} fwd+bwd'] / res[f'vkt {kind} fwd+bwd']:.3f}")
    print(f"ratio {kind} fwd (torch/vkt): {res[f'torch {kind} fwd'] / res[f'vkt {kind} fwd']:.3f}")
E = vkt.tensor(rng.standard_normal((50000, 1024)).astype(np.float32), device="vulkan", requires_grad=True)
tE = torch.from_numpy(E.detach().cpu().numpy()).cuda().requires_grad_()
ia = rng.integers(0, 50000, (8, 1024))
idx, tidx = vkt.tensor(ia, device="vulkan"), torch.from_numpy(ia).cuda()
ge = vkt.tensor(rng.standard_normal((8, 1024, 1024)).astype(np.float32), device="vulkan"); tge = torch.from_numpy(ge.cpu().numpy()).cuda()
p("vkt embedding fwd+bwd", lambda: (clear(E), vkt.embedding(E, idx).backward(ge)), vs, 20)
p("torch embedding fwd+bwd", lambda: (clear(tE), torch.embedding(tE, tidx).backward(tge)), ts, 20)
