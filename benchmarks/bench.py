"""vkt's benchmark suite: each case timed on vkt and, side by side in the same run, on its peer
(NumPy on the CPU; PyTorch CUDA with --torch where CUDA exists). Ratio = peer time / vkt time.

    python benchmarks/bench.py [--torch] [--json FILE] [--only NAME[,NAME...]] [--quick]

Times are synchronized wall clock after a warm-up: a case runs its op `reps` times back to back,
then waits for the device, so per-op figures include vkt's recording and submission.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import vkt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_ops import BINARY, UNARY  # noqa: E402  the op case table the tests run
from report import rate  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


WARM_UP_S = 0.3  # seconds of calls before timing


def warm_up(fn, sync):
    """Calls fn for WARM_UP_S seconds (twice at least): a GPU left idle while the CPU prepared the case
    lowers its clock, and short timing loops do not bring it back (an H100 ran matmuls at 735-1350 MHz
    of 1980, 1.3-2.5 times slower, after two calls of warm-up). Results are held until the device is done,
    as in timed(). The clock starts after the first call: that call may compile kernels (a pipeline the driver
    has not cached, a torch.compile graph) for longer than WARM_UP_S while the GPU idles, which left the
    timed rounds at a low clock (an H100, a cold pipeline cache: gelu(x @ w + b) 1.17 ms against 0.40)."""
    kept = [fn()]
    sync()
    t0, calls = time.perf_counter(), 0
    while calls < 2 or time.perf_counter() - t0 < WARM_UP_S:
        kept.append(fn())
        calls += 1
        if calls % 8 == 0:
            sync()
            kept.clear()
    sync()


def timed(fn, sync, reps):
    """Seconds per call of fn, best of 3 rounds of reps calls each, after warm_up. The round holds fn's
    results until the device is done: vkt computes a pending (fused) result only when something needs
    it, and one nobody holds is never computed."""
    warm_up(fn, sync)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        kept = [fn() for _ in range(reps)]
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
        del kept
    return best


class Peer:
    """Runs a case's peer: PyTorch CUDA when asked and present, else NumPy."""

    def __init__(self, use_torch):
        self.torch = None
        if use_torch:
            import torch
            if torch.cuda.is_available():
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                self.torch = torch
        self.name = f"torch {self.torch.__version__} cuda" if self.torch else f"numpy {np.__version__}"

    def array(self, a):
        return self.torch.from_numpy(a).cuda() if self.torch else a

    def sync(self):
        if self.torch:
            self.torch.cuda.synchronize()


def vsync():
    vkt.vulkan.synchronize()


def op_row(table, name):
    return next(row for row in table if row[0] == name)


def elementwise_cases(peer, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    pa, pb = peer.array(a), peer.array(b)
    t = peer.torch
    peers = {
        "relu": (lambda: t.relu(pa)) if t else (lambda: np.maximum(pa, 0)),
        "gelu": (lambda: t.nn.functional.gelu(pa)) if t else None,
        "silu": (lambda: t.nn.functional.silu(pa)) if t else (lambda: pa / (1 + np.exp(-pa))),
        "add": (lambda: pa + pb) if t else (lambda: pa + pb),
    }
    for name in ["relu", "gelu", "silu", "add"]:
        fn = op_row(BINARY if name == "add" else UNARY, name)[1]
        run = (lambda: fn(x, y)) if name == "add" else (lambda: fn(x))
        nbytes = a.nbytes * (3 if name == "add" else 2)
        yield {"op": name, "shape": f"2^{int(np.log2(n))} float32", "vkt": timed(run, vsync, 20),
               "peer": timed(peers[name], peer.sync, 20) if peers[name] else None, "bytes": nbytes}


def matmul_reps(work, quick):
    """Calls a round for a product of `work` float32 flops (float16 runs about 10 times faster): rounds of
    about 20 ms at vkt's rate on an H100, so that the round's one synchronize (40-80 us there) stays under
    half a percent; at most 50 calls, which bounds the outputs in flight."""
    return max(1, min(50, int((2e9 if quick else 8e11) / work)))


def matmul_cases(peer, quick=False):
    """float32 matmul (PyTorch with TF32 off), batched, float16, and the fused matmul + bias + relu."""
    rng = np.random.default_rng(0)
    t = peer.torch
    cases = [(n, n, n, 1, "float32") for n in ((256, 512) if quick else (512, 1024, 2048, 4096, 8192))]
    cases += [(128, 128, 128, 4, "float32") if quick else (512, 512, 512, 32, "float32"),
              (64, 4096 if quick else 65536, 64, 1, "float32"),  # few output tiles, long K: split-K
              (256, 4096 if quick else 65536, 256, 1, "float32"),  # ... in up to 64 slices
              (256 if quick else 4096,) * 3 + (1, "float16"),
              (1024 if quick else 4096,) * 2 + (1, 1, "float32"),  # matrix @ vector: memory-bound
              (1,) + (1024 if quick else 4096,) * 2 + (1, "float32")]  # vector @ matrix
    for m, k, n, batch, dtype in cases:
        shape_a, shape_b = ((batch, m, k), (batch, k, n)) if batch > 1 else ((m, k), (k, n))
        a = rng.standard_normal(shape_a).astype(dtype)
        b = rng.standard_normal(shape_b).astype(dtype)
        x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
        pa, pb = peer.array(a), peer.array(b)
        reps = matmul_reps(2 * m * n * k * batch / (10 if dtype == "float16" else 1), quick)
        peer_fn = (lambda: pa @ pb) if t or dtype == "float32" else None
        yield {"op": f"matmul {dtype}", "shape": f"{batch}x{m}x{k}x{n}" if batch > 1 else f"{m}x{k}x{n}",
               "vkt": timed(lambda: x @ y, vsync, reps),
               "peer": timed(peer_fn, peer.sync, reps) if peer_fn else None, "flops": 2 * m * n * k * batch,
               **({"bytes": a.nbytes + b.nbytes + m * n * batch * a.itemsize} if 1 in (m, n) else {})}
    # einsum: an attention-score contraction, batch and heads kept, the head dim summed (one batched product)
    b, h, q, d = (2, 4, 128, 64) if quick else (8, 16, 1024, 64)
    qa = rng.standard_normal((b, h, q, d)).astype(np.float32)
    ka = rng.standard_normal((b, h, q, d)).astype(np.float32)
    x, y, px, py = vkt.tensor(qa, device="vulkan"), vkt.tensor(ka, device="vulkan"), peer.array(qa), peer.array(ka)
    einsum = t.einsum if t else np.einsum
    reps = matmul_reps(2 * b * h * q * q * d, quick)
    yield {"op": "einsum bhqd,bhkd->bhqk", "shape": f"{b}x{h}x{q}x{q}x{d}",
           "vkt": timed(lambda: vkt.einsum("bhqd,bhkd->bhqk", x, y), vsync, reps),
           "peer": timed(lambda: einsum("bhqd,bhkd->bhqk", px, py), peer.sync, reps), "flops": 2 * b * h * q * q * d}
    # products in a chain, each reading the last one's result, so that none overlaps another: 8704 rows are 544 tiles
    # for an H100's 264 places, whose last wave leaves the GPU mostly idle (products that overlap fill each other's)
    rows, size, links = (384, 256, 4) if quick else (8704, 1024, 4)
    a = rng.standard_normal((rows, size)).astype(np.float32)
    w = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    x, y, pa, pw = vkt.tensor(a, device="vulkan"), vkt.tensor(w, device="vulkan"), peer.array(a), peer.array(w)

    def chain(v, m):
        for _ in range(links):
            v = v @ m
        return v
    reps = matmul_reps(2 * rows * size * size * links, quick)
    yield {"op": f"matmul float32, {links} chained", "shape": f"{rows}x{size}x{size}",
           "vkt": timed(lambda: chain(x, y), vsync, reps), "peer": timed(lambda: chain(pa, pw), peer.sync, reps),
           "flops": 2 * rows * size * size * links}
    for batch, size in ((2, 256),) if quick else ((8, 1024), (1, 4096)):
        lhs = rng.standard_normal((batch, size, size)).astype(np.float32)
        rhs = rng.standard_normal((batch, size, size)).astype(np.float32)
        bias = rng.standard_normal((batch, size, size)).astype(np.float32)
        x, w, bb = (vkt.tensor(v, device="vulkan") for v in (lhs, rhs, bias))
        px, pw, pbias = (peer.array(v) for v in (lhs, rhs, bias))
        relu = t.relu if t else (lambda v: np.maximum(v, 0))
        reps = matmul_reps(2 * batch * size**3, quick)
        yield {"op": "matmul_add_relu (fused) vs relu(x @ w + b)", "shape": f"{batch}x{size}x{size}x{size}",
               "vkt": timed(lambda: vkt.matmul_add_relu(x, w, bb), vsync, reps),
               "peer": timed(lambda: relu(px @ pw + pbias), peer.sync, reps), "flops": 2 * batch * size**3}


def reduction_cases(peer, n):
    """Whole-tensor sum and mean, row-wise and column-wise sums, softmax: memory-bound, so GB/s tells."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    rows = a.reshape(-1, 4096)
    x, xr = vkt.tensor(a, device="vulkan"), vkt.tensor(rows, device="vulkan")
    pa, pr = peer.array(a), peer.array(rows)
    t = peer.torch
    cases = [("sum", "all", lambda: x.sum(), lambda: pa.sum()),
             ("mean", "all", lambda: x.mean(), lambda: pa.mean()),
             ("sum", "dim=1", lambda: xr.sum(dim=1), lambda: pr.sum(1)),
             ("sum", "dim=0", lambda: xr.sum(dim=0), lambda: pr.sum(0)),
             ("softmax", "dim=1", lambda: xr.softmax(dim=1),
              (lambda: t.softmax(pr, 1)) if t else (lambda: np.exp(pr - pr.max(1, keepdims=True))))]
    for name, how, run, ref in cases:
        nbytes = a.nbytes * (2 if name == "softmax" else 1)
        yield {"op": f"{name} ({how})", "shape": f"2^{int(np.log2(n))} float32", "vkt": timed(run, vsync, 20),
               "peer": timed(ref, peer.sync, 20), "bytes": nbytes}


def sort_cases(peer, quick=False):
    """sort of 2^24 floats (values and indices), topk k=8 of 4096 rows of 32768, cumsum of 2^26 floats.
    bytes: what the op must at least read and write once (sort: the values in, values and int64 indices
    out), so GB/s says how far a multi-pass algorithm is from one pass."""
    rng = np.random.default_rng(0)
    t = peer.torch
    n_sort, rows, n_scan = (2**18, 64, 2**20) if quick else (2**24, 4096, 2**26)
    a = rng.standard_normal(n_sort, dtype=np.float32)
    r = rng.standard_normal((rows, 32768), dtype=np.float32)
    c = rng.standard_normal(n_scan, dtype=np.float32)
    x, xr, xc = (vkt.tensor(v, device="vulkan") for v in (a, r, c))
    pa, pr, pc = (peer.array(v) for v in (a, r, c))
    cases = [("sort", f"2^{int(np.log2(n_sort))} float32", lambda: x.sort(),
              (lambda: t.sort(pa)) if t else (lambda: np.sort(pa)), a.nbytes * 4),
             ("topk (k=8, dim=1)", f"{rows}x32768 float32", lambda: xr.topk(8),
              (lambda: t.topk(pr, 8)) if t else (lambda: np.argpartition(-pr, 8, axis=1)[:, :8]), r.nbytes),
             ("cumsum", f"2^{int(np.log2(n_scan))} float32", lambda: xc.cumsum(0),
              (lambda: t.cumsum(pc, 0)) if t else (lambda: np.cumsum(pc)), c.nbytes * 2)]
    for name, shape, run, ref, nbytes in cases:
        yield {"op": name, "shape": shape, "vkt": timed(run, vsync, 10), "peer": timed(ref, peer.sync, 10),
               "bytes": nbytes}


def linalg_cases(peer, quick=False):
    """Batched small-matrix linear algebra, the case vkt's one-invocation-a-matrix kernels are written for: inv,
    slogdet, lu_factor, cholesky and solve of a batch of 8x8 matrices (well conditioned: identity plus noise; SPD
    for cholesky), float32 and float64."""
    rng = np.random.default_rng(0)
    t = peer.torch
    batch, n = (256 if quick else 4096), 8
    for dtype in ("float32", "float64"):
        a = (np.eye(n) + 0.1 * rng.standard_normal((batch, n, n))).astype(dtype)
        spd = a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype=dtype)
        b = rng.standard_normal((batch, n, 2)).astype(dtype)
        va, vs, vb = (vkt.tensor(v, device="vulkan") for v in (a, spd, b))
        pa, ps, pb = (peer.array(v) for v in (a, spd, b))
        lib = t.linalg if t else np.linalg
        cases = [("linalg.inv", lambda: vkt.linalg.inv(va), lambda: lib.inv(pa)),
                 ("linalg.slogdet", lambda: vkt.linalg.slogdet(va), lambda: lib.slogdet(pa)),
                 ("linalg.solve", lambda: vkt.linalg.solve(va, vb), lambda: lib.solve(pa, pb)),
                 ("linalg.cholesky", lambda: vkt.linalg.cholesky(vs), lambda: lib.cholesky(ps))]
        if t:
            cases.append(("linalg.lu_factor", lambda: vkt.linalg.lu_factor(va), lambda: t.linalg.lu_factor(pa)))
        for name, run, ref in cases:
            yield {"op": f"{name} {dtype}", "shape": f"{batch}x{n}x{n}", "vkt": timed(run, vsync, 20),
                   "peer": timed(ref, peer.sync, 20)}


def view_cases(peer, n):
    """Ops on strided views of a 2^26-float matrix: copies of a transpose and of every other column into
    new dense tensors, and a relu and a whole sum of a transpose; then a dense copy (clone) and a fill (zeros) of
    the same size."""
    a = np.random.default_rng(0).random(n, dtype=np.float32).reshape(-1, 4096)
    x, pa = vkt.tensor(a, device="vulkan"), peer.array(a)
    dense = (lambda v: v.contiguous()) if peer.torch else np.ascontiguousarray
    relu = (lambda v: v.relu()) if peer.torch else (lambda v: np.maximum(v, 0))
    t, h = f"{a.shape[1]}x{a.shape[0]}", f"{a.shape[0]}x{a.shape[1] // 2}"
    cases = [("copy of a transpose", t, lambda: x.t().contiguous(), lambda: dense(pa.T), 2),
             ("copy of every other column", h, lambda: x[:, ::2].contiguous(), lambda: dense(pa[:, ::2]), 2),
             ("relu of a transpose", t, lambda: x.t().relu(), lambda: relu(pa.T), 2),
             ("sum of a transpose", t, lambda: x.t().sum(), lambda: pa.T.sum(), 1)]
    torch = peer.torch
    zeros = (lambda: torch.zeros(a.shape, device="cuda")) if torch else (lambda: np.zeros(a.shape, np.float32))
    cases += [("dense copy (clone)", f"{a.shape[0]}x{a.shape[1]}", lambda: x.clone(),
               (lambda: pa.clone()) if peer.torch else (lambda: pa.copy()), 2),
              ("fill (zeros)", f"{a.shape[0]}x{a.shape[1]}", lambda: vkt.zeros(a.shape, device="vulkan"), zeros, 1)]
    for name, shape, run, ref, passes in cases:
        yield {"op": name, "shape": f"{shape} float32", "vkt": timed(run, vsync, 20), "peer": timed(ref, peer.sync, 20),
               "bytes": passes * a.nbytes * (0.5 if "other" in name else 1)}


def small_op_chain(peer, n_ops=1000, size=256):
    """A chain of small ops: per-op cost of recording (no sync) and of a round trip (sync each)."""
    x = vkt.ones(size, device="vulkan")
    px = peer.array(np.ones(size, np.float32))

    def chain(v, sync_each, sync):
        for _ in range(n_ops):
            v = v * 1.0001
            if sync_each:
                sync()
        return v

    for sync_each in (False, True):
        label = "synchronize after each" if sync_each else "no synchronize"
        yield {"op": f"chain of {n_ops} small ops ({label})", "shape": f"{size} float32",
               "vkt": timed(lambda: chain(x, sync_each, vsync), vsync, 1) / n_ops,
               "peer": timed(lambda: chain(px, sync_each, peer.sync), peer.sync, 1) / n_ops}


def autograd_cases(peer, quick=False):
    """Issue 16's figures: forward + backward of the fused matmul_add_relu against eager relu(x @ w + b),
    forward + backward of softmax(x @ w).sum(), and the backward of a chain of 100 small ops; the leaves
    require grad, gradients are reset to None between steps (as zero_grad does)."""
    rng = np.random.default_rng(0)
    t = peer.torch

    def step(fwd, params):
        """One step, returning the gradients: timed() holds them until the device is done, so that each
        step's are computed (vkt computes a pending gradient only when something needs it, and the next step's
        `grad = None` would otherwise drop it unmade: matmul_add_relu's step read 0.95 ms so, against 1.24 for
        its three products alone)."""
        def run():
            for p in params:
                p.grad = None
            fwd().backward()
            return [p.grad for p in params]
        return run

    def leaves(arrays, lib):
        if lib is vkt:
            return [vkt.tensor(a, device="vulkan", requires_grad=True) for a in arrays]
        return [peer.array(a).requires_grad_() for a in arrays]

    batch, size = (2, 256) if quick else (8, 1024)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((batch, size, size), (size, size), (size,))]
    v, p = leaves(arrays, vkt), leaves(arrays, t) if t else None
    reps = matmul_reps(3 * 2 * batch * size**3, quick)
    yield {"op": "matmul_add_relu fwd+bwd vs relu(x @ w + b)", "shape": f"{batch}x{size}x{size}x{size}",
           "vkt": timed(step(lambda: vkt.matmul_add_relu(*v).sum(), v), vsync, reps),
           "peer": timed(step(lambda: t.relu(p[0] @ p[1] + p[2]).sum(), p), peer.sync, reps) if t else None,
           "flops": 3 * 2 * batch * size**3}

    size = 1024 if quick else 4096
    arrays = [(rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32) for _ in range(2)]
    v, p = leaves(arrays, vkt), leaves(arrays, t) if t else None
    reps = matmul_reps(3 * 2 * size**3, quick)
    yield {"op": "softmax(x @ w).sum() fwd+bwd", "shape": f"{size}x{size}x{size}",
           "vkt": timed(step(lambda: (v[0] @ v[1]).softmax(-1).sum(), v), vsync, reps),
           "peer": timed(step(lambda: (p[0] @ p[1]).softmax(-1).sum(), p), peer.sync, reps) if t else None,
           "flops": 3 * 2 * size**3}

    n_ops, small = 100, 256
    v = leaves([np.ones(small, np.float32)], vkt)
    p = leaves([np.ones(small, np.float32)], t) if t else None

    def chain(x):
        for _ in range(n_ops):
            x = x * 1.0001
        return x.sum()

    def backward_only(lib_leaf, sync):
        def run():
            loss = chain(lib_leaf[0])
            sync()
            t0 = time.perf_counter()
            loss.backward()
            sync()
            return time.perf_counter() - t0
        return run

    def best_backward(run, rounds=50):
        run()
        return min(run() for _ in range(rounds))

    yield {"op": f"backward of a chain of {n_ops} small ops (per op)", "shape": f"{small} float32",
           "vkt": best_backward(backward_only(v, vsync)) / n_ops,
           "peer": best_backward(backward_only(p, peer.sync)) / n_ops if t else None}


def transfers(peer, mib=256):
    a = np.random.default_rng(0).random(mib * 2**18, dtype=np.float32)
    dev = vkt.tensor(a, device="vulkan")
    up = timed(lambda: vkt.tensor(a, device="vulkan"), vsync, 3)
    down = timed(lambda: np.asarray(dev), vsync, 3)
    if peer.torch:
        t = peer.torch.from_numpy(a).cuda()
        pup = timed(lambda: peer.torch.from_numpy(a).cuda(), peer.sync, 3)
        pdown = timed(lambda: t.cpu().numpy(), peer.sync, 3)
    else:
        pup = pdown = timed(lambda: a.copy(), peer.sync, 3)
    yield {"op": "upload (from NumPy)", "shape": f"{mib} MiB", "vkt": up, "peer": pup, "bytes": a.nbytes}
    yield {"op": "download (to NumPy)", "shape": f"{mib} MiB", "vkt": down, "peer": pdown, "bytes": a.nbytes}


def first_result(peer):
    """A fresh process to its first result: cold (empty shader cache) and warm (cache filled)."""
    code = ("import time; t0 = time.perf_counter(); import vkt; "
            "x = vkt.ones(1024, device='vulkan'); y = (x * 2).relu() + x; y.cpu(); "
            "print(time.perf_counter() - t0)")
    def run(env):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"the fresh process exited with {r.returncode}: {r.stderr.strip()[-2000:]}")
        return float(r.stdout)

    with tempfile.TemporaryDirectory() as cache:
        runs = [run(dict(os.environ, XDG_CACHE_HOME=cache)) for _ in range(3)]
    for label, secs in (("cold cache", runs[0]), ("warm cache", min(runs[1:]))):
        yield {"op": f"fresh process to first result ({label})", "shape": "import + 3 ops", "vkt": secs, "peer": None}


def cpu_cases(peer, n=2**22, matmul=1024, n_ops=1000):
    """vkt's cpu device against NumPy (issue 20's targets): elementwise ops and reductions of n float32,
    a float32 matmul, and the per-op cost of a chain of small ops. NumPy is the peer here, --torch or not."""
    del peer
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    rows = a.reshape(-1, 4096)
    x, y, xr = vkt.tensor(a), vkt.tensor(b), vkt.tensor(rows)
    ah, au, am = a.astype(np.float16), (a * 50).astype(np.uint8), a > 0
    h, u, m = vkt.tensor(ah), vkt.tensor(au), vkt.tensor(am)

    def log_softmax(r):
        shifted = r - r.max(1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(1, keepdims=True))

    def nothing():
        pass

    size = f"2^{int(np.log2(n))} float32"
    cases = [("relu", lambda: x.relu(), lambda: np.maximum(a, 0), 2),
             ("x * 2 + 1", lambda: x * 2 + 1, lambda: a * 2 + 1, 4),
             ("add", lambda: x + y, lambda: a + b, 3),
             ("silu", lambda: x.silu(), lambda: a / (1 + np.exp(-a)), 2),
             ("sum (all)", lambda: x.sum(), lambda: a.sum(), 1),
             ("mean (all)", lambda: x.mean(), lambda: a.mean(), 1),
             ("sum (dim=1)", lambda: xr.sum(dim=1), lambda: rows.sum(1), 1),
             ("sum (dim=0)", lambda: xr.sum(dim=0), lambda: rows.sum(0), 1),
             ("softmax (dim=1)", lambda: xr.softmax(dim=1), lambda: np.exp(rows - rows.max(1, keepdims=True)), 2),
             ("log_softmax (dim=1)", lambda: xr.log_softmax(dim=1), lambda: log_softmax(rows), 2),
             ("prod (dim=1)", lambda: xr.prod(dim=1), lambda: rows.prod(1), 1),
             ("amax (dim=1)", lambda: xr.amax(dim=1), lambda: rows.max(1), 1),
             ("argmax (dim=1)", lambda: xr.argmax(dim=1), lambda: rows.argmax(1), 1),
             ("var (dim=1)", lambda: xr.var(dim=1), lambda: rows.var(1, ddof=1), 1),
             ("add float16", lambda: h + h, lambda: ah + ah, 1.5),
             ("add uint8", lambda: u + u, lambda: au + au, 0.75),
             ("logical_and bool", lambda: m & m, lambda: am & am, 0.75)]
    for name, run, ref, passes in cases:
        yield {"op": f"cpu {name}", "shape": size, "vkt": timed(run, nothing, 20), "peer": timed(ref, nothing, 20),
               "bytes": passes * a.nbytes}
    ma, mb = (rng.standard_normal((matmul, matmul)).astype(np.float32) for _ in range(2))
    ta, tb = vkt.tensor(ma), vkt.tensor(mb)
    yield {"op": "cpu matmul float32", "shape": f"{matmul}x{matmul}x{matmul}", "vkt": timed(lambda: ta @ tb, nothing, 5),
           "peer": timed(lambda: ma @ mb, nothing, 5), "flops": 2 * matmul**3}
    small, psmall = vkt.ones(256), np.ones(256, np.float32)

    def chain(v):
        for _ in range(n_ops):
            v = v * 1.0001
        return v

    yield {"op": f"cpu chain of {n_ops} small ops (per op)", "shape": "256 float32",
           "vkt": timed(lambda: chain(small), nothing, 1) / n_ops, "peer": timed(lambda: chain(psmall), nothing, 1) / n_ops}


def training_step(model, opt, loss_fn, x, y):
    """One optimizer step of model on the batch (x, y), as a closure to time."""
    def run():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    return run


def training_cases(peer, quick=False):
    """Issue 17's figures: one AdamW training step of an MLP 784-1024-1024-10 at batch 256 (forward,
    cross-entropy, backward, step), layer_norm forward + backward of (8192, 1024), cross_entropy forward +
    backward of (8192, 32000) logits, and one AdamW step over 100M parameters in 100 tensors. Both sides start
    from the same weights; gradients are reset to None between steps."""
    rng = np.random.default_rng(0)
    t = peer.torch

    def on(lib, a, grad=False):
        if lib is vkt:
            return vkt.tensor(a, device="vulkan", requires_grad=grad)
        return peer.array(a).requires_grad_(grad)

    def mlp_step(lib, nn, optim, x, y):
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        if lib is vkt:
            model = model.to("vulkan")
        else:
            model = model.cuda()
        for prm, a in zip(model.parameters(), weights):
            with lib.no_grad():
                prm.copy_(on(lib, a))
        return training_step(model, optim.AdamW(model.parameters(), lr=1e-3), nn.CrossEntropyLoss(), x, y)

    batch = 64 if quick else 256
    shapes = ((1024, 784), (1024,), (1024, 1024), (1024,), (10, 1024), (10,))
    weights = [(rng.standard_normal(s) * 0.03).astype(np.float32) for s in shapes]
    xa, ya = rng.standard_normal((batch, 784)).astype(np.float32), rng.integers(0, 10, batch)
    vrun = mlp_step(vkt, vkt.nn, vkt.optim, on(vkt, xa), on(vkt, ya))
    prun = mlp_step(t, t.nn, t.optim, on(t, xa), on(t, ya)) if t else None
    yield {"op": "MLP 784-1024-1024-10 AdamW training step", "shape": f"batch {batch}",
           "vkt": timed(vrun, vsync, 20), "peer": timed(prun, peer.sync, 20) if t else None,
           "flops": 3 * 2 * batch * (784 * 1024 + 1024 * 1024 + 1024 * 10)}

    def fwd_bwd(fn, leaves):
        def run():  # returns the gradients, as autograd_cases' step does, so that each step's are computed
            for leaf in leaves:
                leaf.grad = None
            fn().backward()
            return [leaf.grad for leaf in leaves]
        return run

    rows, width = (1024, 1024) if quick else (8192, 1024)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((rows, width), (width,), (width,))]
    v = [on(vkt, a, True) for a in arrays]
    p = [on(t, a, True) for a in arrays] if t else None
    ln = lambda lib, x: lambda: lib.nn.functional.layer_norm(x[0], (width,), x[1], x[2]).sum()  # noqa: E731
    yield {"op": "layer_norm fwd+bwd", "shape": f"{rows}x{width}",
           "vkt": timed(fwd_bwd(ln(vkt, v), v), vsync, 50),
           "peer": timed(fwd_bwd(ln(t, p), p), peer.sync, 50) if t else None, "bytes": 5 * 4 * rows * width}

    rows, classes = (1024, 4096) if quick else (8192, 32000)
    logits, target = rng.standard_normal((rows, classes)).astype(np.float32), rng.integers(0, classes, rows)
    v, p = [on(vkt, logits, True)], [on(t, logits, True)] if t else None
    ce = lambda lib, x, y: lambda: lib.nn.functional.cross_entropy(x[0], y)  # noqa: E731
    yield {"op": "cross_entropy fwd+bwd", "shape": f"{rows}x{classes}",
           "vkt": timed(fwd_bwd(ce(vkt, v, on(vkt, target)), v), vsync, 20),
           "peer": timed(fwd_bwd(ce(t, p, on(t, target)), p), peer.sync, 20) if t else None,
           "bytes": 3 * 4 * rows * classes}

    count, size = (10, 100_000) if quick else (100, 1_000_000)
    arrays = [rng.standard_normal(size).astype(np.float32) for _ in range(count)]

    def adamw(lib, optim):
        params = [on(lib, a, True) for a in arrays]
        for prm in params:
            prm.grad = lib.ones_like(prm) * 1e-3
        opt = optim.AdamW(params, lr=1e-3)
        return opt.step

    yield {"op": f"AdamW step, {count} tensors", "shape": f"{count * size / 1e6:g}M float32",
           "vkt": timed(adamw(vkt, vkt.optim), vsync, 10),
           "peer": timed(adamw(t, t.optim), peer.sync, 10) if t else None, "bytes": 4 * 7 * count * size}


def conv_cases(peer, quick=False):
    """Convolutional training, which no issue times yet: a ResNet stage's 3x3 convolution (64 channels at
    56x56, batch 32) forward and forward + backward, and one SGD step of a small CIFAR-style CNN (two 3x3
    convolutions with ReLU and 2x2 max pooling, then a linear layer) at batch 128. cuDNN without TF32."""
    rng = np.random.default_rng(0)
    t = peer.torch
    n, c, hw = (4, 16, 28) if quick else (32, 64, 56)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in ((n, c, hw, hw), (c, c, 3, 3), (c,))]
    flops = 2 * n * c * c * 9 * hw * hw
    v = [vkt.tensor(a, device="vulkan", requires_grad=True) for a in arrays]
    p = [peer.array(a).requires_grad_(True) for a in arrays] if t else None
    g = rng.standard_normal((n, c, hw, hw)).astype(np.float32)  # the output's gradient: not a sum's constant
    vg, pg = vkt.tensor(g, device="vulkan"), peer.array(g) if t else None
    conv = lambda lib, x: lambda: lib.nn.functional.conv2d(x[0], x[1], x[2], padding=1)  # noqa: E731

    def fwd(lib, x):
        def run():
            with lib.no_grad():
                return conv(lib, x)()
        return run

    def fwd_bwd(lib, x, grad):
        def run():  # the output is kept too: vkt computes no result that nobody holds
            for leaf in x:
                leaf.grad = None
            y = conv(lib, x)()
            y.backward(grad)
            return [y] + [leaf.grad for leaf in x]
        return run
    shape = f"{n}x{c}x{hw}x{hw}, 3x3"
    yield {"op": "conv2d", "shape": shape, "vkt": timed(fwd(vkt, v), vsync, 20),
           "peer": timed(fwd(t, p), peer.sync, 20) if t else None, "flops": flops}
    yield {"op": "conv2d fwd+bwd", "shape": shape, "vkt": timed(fwd_bwd(vkt, v, vg), vsync, 10),
           "peer": timed(fwd_bwd(t, p, pg), peer.sync, 10) if t else None, "flops": 3 * flops}

    batch = 16 if quick else 128
    xa = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
    ya = rng.integers(0, 10, batch)

    def cnn_step(lib):
        nn = lib.nn
        lib.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64 * 8 * 8, 10))
        dev = "vulkan" if lib is vkt else "cuda"
        model = model.to(dev)
        x, y = lib.tensor(xa, device=dev), lib.tensor(ya, device=dev)
        return training_step(model, lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), nn.CrossEntropyLoss(),
                             x, y)
    cnn_flops = 3 * 2 * batch * (32 * 27 * 32 * 32 + 64 * 288 * 16 * 16 + 10 * 4096)
    yield {"op": "CNN 3-32-64-10 SGD training step", "shape": f"batch {batch}, 32x32",
           "vkt": timed(cnn_step(vkt), vsync, 20), "peer": timed(cnn_step(t), peer.sync, 20) if t else None,
           "flops": cnn_flops}


def unfused(fn):
    """fn run with vkt's fusion off."""
    def run():
        vkt.vulkan.set_fusion(False)
        try:
            return fn()
        finally:
            vkt.vulkan.set_fusion(True)
    return run


def fused_kernels(fn):
    """What one call of fn over vulkan copies dispatches: the dispatch count and the fused kernels, so that a
    fused row says it measured the fused path (gelu(x @ w + b): one dispatch, "matmul add gelu")."""
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    kept = fn()
    vkt.vulkan.synchronize()
    s = vkt.vulkan.kernel_stats()
    del kept
    return f"{s['dispatches']} dispatch(es), fused: {s['fused_kernels']}"


def fusion_cases(peer, quick=False):
    """Issue 19's figures: an elementwise chain against PyTorch eager and torch.compile, gelu(x @ w + b)
    against torch.compile, a layer-norm-style chain with two reductions against eager, a reduction of a
    product (fused into the reduction's load) against eager and torch.compile, the MLP training
    step and a chain of small ops with vkt's fusion on and off."""
    rng = np.random.default_rng(0)
    t = peer.torch
    compiled = None
    if t:
        try:
            compiled = t.compile
            compiled(lambda a: a + 1)(t.ones(4, device="cuda"))
        except Exception as e:  # noqa: BLE001 - no compiler on this machine: the rows say so
            print(f"torch.compile unavailable: {type(e).__name__}: {e}", file=sys.stderr)
            compiled = None

    def rows(op, shape, lib_fn, arrays, reps, **extra):
        v = [vkt.tensor(a, device="vulkan") for a in arrays]
        p = [peer.array(a) for a in arrays] if t else None
        vrun = lambda: lib_fn(vkt, *v)  # noqa: E731
        eager = (lambda: lib_fn(t, *p)) if t else None
        yield {"op": f"{op} (peer: eager)", "shape": shape, "vkt": timed(vrun, vsync, reps),
               "peer": timed(eager, peer.sync, reps) if t else None, **extra}
        yield {"op": f"{op} unfused (peer: eager)", "shape": shape, "vkt": timed(unfused(vrun), vsync, reps),
               "peer": timed(eager, peer.sync, reps) if t else None, **extra}
        if compiled:
            fn = compiled(lambda *a: lib_fn(t, *a))
            yield {"op": f"{op} (peer: torch.compile)", "shape": shape, "vkt": timed(vrun, vsync, reps),
                   "peer": timed(lambda: fn(*p), peer.sync, reps), **extra}

    n = 2**20 if quick else 2**24
    chain = lambda lib, x: lib.sigmoid(lib.relu(x * 1.5 + 0.5) * x)  # noqa: E731
    yield from rows("sigmoid(relu(x * 1.5 + 0.5) * x)", f"2^{int(np.log2(n))} float32", chain,
                    [rng.standard_normal(n).astype(np.float32)], 50, bytes=8 * n)

    b, m = (2, 256) if quick else (8, 1024)
    lin = lambda lib, x, w, bias: lib.nn.functional.gelu(x @ w + bias)  # noqa: E731
    lin_arrays = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in ((b, m, m), (m, m), (m,))]
    lin_v = [vkt.tensor(a, device="vulkan") for a in lin_arrays]
    kernels = fused_kernels(lambda: lin(vkt, *lin_v))
    print(f"gelu(x @ w + b) runs as {kernels}", file=sys.stderr)
    yield from rows("gelu(x @ w + b)", f"{b}x{m}x{m}x{m}", lin, lin_arrays, 20, flops=2 * b * m**3, kernels=kernels)
    half_arrays = [a.astype(np.float16) for a in lin_arrays]  # the tensor-core tile's epilogue
    half_v = [vkt.tensor(a, device="vulkan") for a in half_arrays]
    kernels = fused_kernels(lambda: lin(vkt, *half_v))
    print(f"float16 gelu(x @ w + b) runs as {kernels}", file=sys.stderr)
    yield from rows("float16 gelu(x @ w + b)", f"{b}x{m}x{m}x{m}", lin, half_arrays, 20, flops=2 * b * m**3,
                    kernels=kernels)

    rows_, width = (1024, 1024) if quick else (8192, 1024)

    def ln(lib, x, g, bias):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) * lib.rsqrt(var + 1e-5) * g + bias
    yield from rows("layer-norm chain, two reductions", f"{rows_}x{width}", ln,
                    [rng.standard_normal(s).astype(np.float32) for s in ((rows_, width), (width,), (width,))], 50,
                    bytes=3 * 4 * rows_ * width)

    dot = lambda lib, x, y: (x * y).sum(dim=1)  # noqa: E731 - the product is computed in the sum's load
    dot_arrays = [rng.standard_normal((rows_, width)).astype(np.float32) for _ in range(2)]
    dot_v = [vkt.tensor(a, device="vulkan") for a in dot_arrays]
    kernels = fused_kernels(lambda: dot(vkt, *dot_v))
    print(f"(x * y).sum(dim=1) runs as {kernels}", file=sys.stderr)
    yield from rows("(x * y).sum(dim=1)", f"{rows_}x{width}", dot, dot_arrays, 50, bytes=2 * 4 * rows_ * width,
                    kernels=kernels)

    # a comparison as floats in arithmetic and counted: a cast and a reduction in another type than the comparison's
    masks = lambda lib, x, y: ((x > 0).float() * y, (x > y).sum(dim=1))  # noqa: E731
    kernels = fused_kernels(lambda: masks(vkt, *dot_v))
    print(f"((x > 0).float() * y, (x > y).sum(dim=1)) runs as {kernels}", file=sys.stderr)
    yield from rows("((x > 0).float() * y, (x > y).sum(dim=1))", f"{rows_}x{width}", masks, dot_arrays, 50,
                    kernels=kernels)

    yield next(training_cases(peer, quick))  # its first row is the MLP's step
    vkt.vulkan.set_fusion(False)
    try:
        row = next(training_cases(peer, quick))
        yield {**row, "op": row["op"] + " unfused"}
        for row in small_op_chain(peer, 200 if quick else 1000):
            yield {**row, "op": row["op"] + " unfused"}
    finally:
        vkt.vulkan.set_fusion(True)
    yield from small_op_chain(peer, 200 if quick else 1000)


def kernel_cases(peer, quick=False, n_ops=1000):
    """Issue 18's figures: examples/custom_kernel.py's RawKernel (a plain tiled shader) against the built-in
    vkt.matmul_add_relu at the same shape (the peer: eager relu(x @ w + b)); then the recording cost of one
    RawKernel launch over 256 floats against one built-in op's (fusion off, so it dispatches too), no sync."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import custom_kernel

    rng = np.random.default_rng(0)
    t = peer.torch
    batch, size = (2, 256) if quick else (8, 1024)
    lhs, rhs, bias = (rng.standard_normal(s).astype(np.float32) for s in ((batch, size, size), (size, size), (size,)))
    x, w, b = (vkt.tensor(v, device="vulkan") for v in (lhs, rhs, bias))
    px, pw, pb = (peer.array(v) for v in (lhs, rhs, bias))
    relu = t.relu if t else (lambda v: np.maximum(v, 0))
    reps = matmul_reps(2 * batch * size**3, quick)
    peer_time = timed(lambda: relu(px @ pw + pb), peer.sync, reps)
    shape = f"{batch}x{size}x{size}x{size}"
    for label, fn in (("RawKernel matmul+bias+relu (example)", lambda: custom_kernel.fused_matmul_add_relu(x, w, b)),
                      ("vkt.matmul_add_relu, same shape", lambda: vkt.matmul_add_relu(x, w, b))):
        yield {"op": label, "shape": shape, "vkt": timed(fn, vsync, reps), "peer": peer_time,
               "flops": 2 * batch * size**3}
    scale = vkt.RawKernel("""
layout(std430, binding = 0) buffer X { float x[]; };
void main() { x[gl_GlobalInvocationID.x] *= p.factor; }
""", signature="float factor", workgroup_size=256)
    v, pv = vkt.ones(256, device="vulkan"), peer.array(np.ones(256, np.float32))

    def launches(fn):
        for _ in range(n_ops):
            fn()

    yield {"op": f"RawKernel launch x{n_ops} (no synchronize)", "shape": "256 float32",
           "vkt": timed(lambda: launches(lambda: scale(v, 1.0001, grid=1, outputs=(v,))), vsync, 1) / n_ops,
           "peer": timed(lambda: launches(lambda: pv.__imul__(1.0001)), peer.sync, 1) / n_ops}
    yield {"op": f"built-in op launch x{n_ops} (fusion off)", "shape": "256 float32",
           "vkt": timed(unfused(lambda: launches(lambda: v.mul_(1.0001))), vsync, 1) / n_ops,
           "peer": timed(lambda: launches(lambda: pv.__imul__(1.0001)), peer.sync, 1) / n_ops}


CASES = {"elementwise": elementwise_cases, "reduce": reduction_cases, "views": view_cases, "matmul": matmul_cases,
         "sort": sort_cases, "chain": small_op_chain, "linalg": linalg_cases,
         "autograd": autograd_cases, "training": training_cases, "fusion": fusion_cases, "transfer": transfers,
         "startup": first_result, "cpu": cpu_cases, "kernels": kernel_cases, "conv": conv_cases}


def fmt(row):
    v, p = row["vkt"], row.get("peer")
    ratio = f"{p / v:6.2f}" if p else "     -"
    peer = f"{p * 1e3:10.4f} ms" if p else "          -"
    return f"{row['op']:<46} {row['shape']:<22} {v * 1e3:10.4f} ms {peer} {ratio}  {rate(row, v):>15}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch", action="store_true", help="compare with PyTorch CUDA")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--only", help="comma-separated case groups: " + ", ".join(CASES))
    ap.add_argument("--quick", action="store_true", help="smaller sizes (for lavapipe)")
    args = ap.parse_args()
    peer = Peer(args.torch)
    props = vkt.vulkan.get_device_properties()
    print(f"vkt on {props.name} ({props.type}, Vulkan {props.api_version}, {props.driver}); peer: {peer.name}")
    print(f"{'op':<46} {'shape':<22} {'vkt':>13} {'peer':>13} {'ratio':>6}  rate (vkt)")
    rows, failed = [], []
    groups = args.only.split(",") if args.only else list(CASES)
    for g in groups:
        kwargs = {}
        if args.quick:
            kwargs = {"elementwise": {"n": 2**20}, "reduce": {"n": 2**20}, "views": {"n": 2**20},
                      "transfer": {"mib": 16}, "chain": {"n_ops": 200}, "matmul": {"quick": True},
                      "sort": {"quick": True}, "linalg": {"quick": True}, "autograd": {"quick": True}, "training": {"quick": True}, "fusion": {"quick": True},
                      "kernels": {"quick": True, "n_ops": 200}, "conv": {"quick": True},
                      "cpu": {"n": 2**20, "matmul": 256, "n_ops": 200}}.get(g, {})
        sized = ("elementwise", "reduce", "views")
        gen = CASES[g](peer, kwargs.get("n", 2**26)) if g in sized else CASES[g](peer, **kwargs)
        try:  # a group that fails is reported, and the other groups' rows are still kept
            for row in gen:
                rows.append(row)
                print(fmt(row), flush=True)
        except Exception as e:  # noqa: BLE001
            failed.append(g)
            print(f"group {g} failed: {type(e).__name__}: {e}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": props.name, "driver": props.driver, "peer": peer.name, "rows": rows}, f, indent=1)
    if failed:
        sys.exit(f"failed groups: {', '.join(failed)}")


if __name__ == "__main__":
    main()
