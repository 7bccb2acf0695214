"""The pieces of bench.py's autograd cases timed one by one against PyTorch CUDA (a diagnostic, not a
benchmark table): the fused forward, forward + backward seeded by sum() and by a full gradient, each backward
kernel alone, and softmax(x @ w) forward + backward. Run on the GPU machine: python3 benchmarks/autograd_pieces.py"""
import sys, numpy as np, torch, vkt
sys.path.insert(0, "benchmarks")
from bench import timed
vs, ts = vkt.vulkan.synchronize, torch.cuda.synchronize
torch.backends.cuda.matmul.allow_tf32 = False
rng = np.random.default_rng(0)
arrs = [rng.standard_normal(s).astype(np.float32) for s in ((8, 1024, 1024), (1024, 1024), (1024,))]
x, w, b = (vkt.tensor(a, device="vulkan", requires_grad=True) for a in arrs)
tx, tw, tb = (torch.from_numpy(a).cuda().requires_grad_() for a in arrs)
ones = vkt.ones(8, 1024, 1024, device="vulkan"); tones = torch.ones(8, 1024, 1024, device="cuda")
def p(label, f, sync, reps=20):
    print(f"{label:44s} {timed(f, sync, reps)*1e3:8.3f} ms", flush=True)
def clear(*ps):
    for q in ps: q.grad = None
p("vkt fwd", lambda: vkt.matmul_add_relu(x, w, b), vs)
p("torch fwd", lambda: torch.relu(tx @ tw + tb), ts)
# Each vkt step returns its gradients, so that timed() holds them until they are computed (a pending gradient
# that the next step's clear() drops is never computed).
p("vkt fwd+bwd sum()", lambda: (clear(x, w, b), vkt.matmul_add_relu(x, w, b).sum().backward(), x.grad, w.grad, b.grad), vs)
p("vkt fwd+bwd gradient=ones",
  lambda: (clear(x, w, b), vkt.matmul_add_relu(x, w, b).backward(ones), x.grad, w.grad, b.grad), vs)
p("torch fwd+bwd sum()", lambda: (clear(tx, tw, tb), torch.relu(tx @ tw + tb).sum().backward()), ts)
y = vkt.matmul_add_relu(x, w, b).detach(); g = vkt.randn(8, 1024, 1024, device="vulkan")
gexp = vkt.ones((), device="vulkan").expand(8, 1024, 1024)
p("vkt threshold(g, y)", lambda: vkt.where(y > 0, g, 0), vs)
p("vkt y * gexp", lambda: y * gexp, vs)
p("vkt g2 @ w.T (folded)", lambda: g.reshape(-1, 1024) @ w.detach().T, vs)
p("vkt x2.T @ g2", lambda: x.detach().reshape(-1, 1024).T @ g.reshape(-1, 1024), vs)
p("vkt sum to bias", lambda: g.sum((0, 1)), vs)
p("vkt clone 8M", lambda: g.clone(), vs)
n = 4096
a2 = [rng.standard_normal((n, n)).astype(np.float32) / 64 for _ in range(2)]
sx, sw = (vkt.tensor(a, device="vulkan", requires_grad=True) for a in a2)
tsx, tsw = (torch.from_numpy(a).cuda().requires_grad_() for a in a2)
p("vkt softmax fwd+bwd", lambda: (clear(sx, sw), (sx @ sw).softmax(-1).sum().backward(), sx.grad, sw.grad), vs, 3)
p("torch softmax fwd+bwd", lambda: (clear(tsx, tsw), (tsx @ tsw).softmax(-1).sum().backward()), ts, 3)
p("vkt softmax fwd", lambda: (sx @ sw).softmax(-1).sum(), vs, 3)
with vkt.no_grad():
    p("vkt softmax fwd no_grad", lambda: (sx @ sw).softmax(-1).sum(), vs, 3)
z = (sx @ sw).detach(); tz = (tsx @ tsw).detach()
sy, tsy = z.softmax(-1), tz.softmax(-1)
sg, tsg = vkt.ones((), device="vulkan").expand(n, n), torch.ones((), device="cuda").expand(n, n)
p("vkt softmax(z)", lambda: z.softmax(-1), vs)
p("torch softmax(z)", lambda: tz.softmax(-1), ts)
p("vkt softmax(z).sum()", lambda: z.softmax(-1).sum(), vs)
p("torch softmax(z).sum()", lambda: tz.softmax(-1).sum(), ts)
p("vkt y * (g - (g * y).sum(-1, keepdim))", lambda: sy * (sg - (sg * sy).sum(-1, keepdim=True)), vs)
p("torch softmax backward", lambda: torch._softmax_backward_data(tsg, tsy, -1, torch.float32), ts)
p("vkt (g * y).sum(-1)", lambda: (sg * sy).sum(-1, keepdim=True), vs)
p("vkt z.sum()", lambda: z.sum(), vs)
vkt.vulkan.synchronize(); vkt.vulkan.reset_kernel_stats()
(clear(sx, sw), (sx @ sw).softmax(-1).sum().backward()); vkt.vulkan.synchronize()
print("vkt softmax fwd+bwd kernels:", vkt.vulkan.kernel_stats())
