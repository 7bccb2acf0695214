# Matmul epilogues (issue 19): elementwise ops on a matmul's result run in the matmul's own kernel. Checks
# the dispatch counts (kernel_stats, taken before results are read back), that results are bit-identical
# to the unfused path (vkt.vulkan.set_fusion(False)) and close to NumPy's float64, and that a product
# consumed by anything else is computed as before.
import numpy as np
import pytest

import vkt
from conftest import assert_close

F = vkt.nn.functional
rng = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("fusion")


def arrays(*shapes, dtype=np.float32):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def run(fn, *arrs, fused=True):
    """fn over vulkan copies of arrs with fusion on or off: its results as NumPy arrays, and kernel_stats()
    of the call, synchronized before anything is read back (a read may dispatch a copy)."""
    vkt.vulkan.set_fusion(fused)
    try:
        ts = [vkt.tensor(a, device="vulkan") for a in arrs]
        vkt.vulkan.synchronize()
        vkt.vulkan.reset_kernel_stats()
        out = fn(*ts)
        vkt.vulkan.synchronize()
        stats = vkt.vulkan.kernel_stats()
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(o.cpu().numpy() for o in outs), stats
    finally:
        vkt.vulkan.set_fusion(True)


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def fused_once(fn, *arrs, kernel=None, dispatches=1):
    """fn's results with fusion on, after checking that they took `dispatches` dispatches (the fused kernel
    named `kernel` among them) and equal the unfused path's bit for bit."""
    got, stats = run(fn, *arrs)
    want, _ = run(fn, *arrs, fused=False)
    assert stats["dispatches"] == dispatches, stats
    if kernel:
        assert (kernel, 1) in stats["fused_kernels"], stats
    for g, w in zip(got, want):
        assert same_bits(g, w), np.abs(g.astype(np.float64) - w).max()
    return got


def f64(*arrs):
    return [a.astype(np.float64) for a in arrs]


def gelu(v):
    from math import erf
    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))


# Shapes: batch x M x K @ K x N. 16 x 200 x 130 has 64 output tiles of 128 x 128, which the float32 wide
# tile takes; the others take the small tile (matvec for one row).
SHAPES = [(16, 200, 24, 130), (1, 70, 24, 33), (3, 37, 19, 53), (1, 1, 40, 77)]


@pytest.mark.parametrize("b, m, k, n", SHAPES, ids=[f"{b}x{m}x{k}x{n}" for b, m, k, n in SHAPES])
def test_gelu_of_linear_is_one_dispatch(b, m, k, n):
    x, w, bias = arrays((b, m, k), (k, n), (n,))
    (got,) = fused_once(lambda x, w, bias: F.gelu(x @ w + bias), x, w, bias, kernel="matmul add gelu")
    xn, wn, bn = f64(x, w, bias)
    assert_close(got, gelu(xn @ wn + bn), rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("transposed", [False, True], ids=["w", "w.T"])
def test_gelu_of_linear_on_the_big_tile(transposed):
    # 4 x 1030 x 1031 has 288 tiles of 128 x 128: the big wide tile, whose epilogue stages the sums through
    # shared memory in chunks of rows; edges cut tiles, and w.T is read along k.
    x, w, bias = arrays((4, 1030, 67), (1031, 67) if transposed else (67, 1031), (1031,))
    op = (lambda x, w, bias: F.gelu(x @ w.T + bias)) if transposed else (lambda x, w, bias: F.gelu(x @ w + bias))
    (got,) = fused_once(op, x, w, bias, kernel="matmul add gelu")
    xn, wn, bn = f64(x, w, bias)
    assert_close(got, gelu(xn @ (wn.T if transposed else wn) + bn), rtol=1e-4, atol=1e-4 * np.sqrt(67))


def test_residual_scale_and_activations():
    x, w, bias, r = arrays((16, 200, 24), (24, 130), (130,), (16, 200, 130))
    fused_once(lambda x, w, bias, r: (x @ w + bias) + r, x, w, bias, r, kernel="matmul add add")
    fused_once(lambda x, w, bias, r: ((x @ w) * 0.5 + r).relu(), x, w, bias, r, kernel="matmul mul add relu")
    fused_once(lambda x, w, bias, r: F.silu(x @ w - 1.0).sigmoid(), x, w, bias, r, kernel="matmul sub silu sigmoid")
    fused_once(lambda x, w, bias, r: (x @ w > bias), x, w, bias, r, kernel="matmul gt")


def test_cast_to_float16():
    x, w, bias = arrays((16, 200, 24), (24, 130), (130,))
    (got,) = fused_once(lambda x, w, bias: (x @ w + bias).half(), x, w, bias)
    assert got.dtype == np.float16


def test_float16_product():
    x, w, bias = arrays((3, 37, 19), (19, 53), (53,), dtype=np.float16)
    dispatches, kernel = float16_epilogue("matmul add gelu")
    (got,) = fused_once(lambda x, w, bias: F.gelu(x @ w + bias), x, w, bias, kernel=kernel, dispatches=dispatches)
    assert got.dtype == np.float16


# float16 products. On NVIDIA's workgroup-scope tensor-core shader only a one-op expression joins the product
# (matmul.c says why): a longer one runs in a kernel of its own after the product's.
COOP2 = vkt.vulkan.get_device_properties().cooperative_matrix2


def float16_epilogue(kernel):
    """The dispatches and the fused kernel of a float16 product followed by `kernel`'s ops."""
    return (2, kernel.split(" ", 1)[1]) if COOP2 and kernel.count(" ") > 1 else (1, kernel)


def float16_kept_product(x, w, bias):
    h = x @ w
    return h, h + bias


def float16_kept_intermediate(x, w, bias):
    t = x @ w + bias
    return t, t.sigmoid() * 2


FLOAT16_EPILOGUES = {
    "add": (lambda x, w, bias: x @ w + bias, "matmul add"),
    "gelu": (lambda x, w, bias: F.gelu(x @ w + bias), "matmul add gelu"),
    "w transposed": (lambda x, wt, bias: x @ wt.T * bias, "matmul mul"),  # w dense along k
    "kept product": (float16_kept_product, "matmul add"),
    "kept intermediate": (float16_kept_intermediate, "matmul add sigmoid mul"),
    "float32 result": (lambda x, w, bias: (x @ w).float(), "matmul cast"),
}


@pytest.mark.parametrize("shape", [(2, 256, 64, 384), (1, 300, 72, 136)], ids=["aligned", "edges"])
@pytest.mark.parametrize("case", FLOAT16_EPILOGUES)
def test_float16_epilogues(case, shape):
    b, m, k, n = shape
    fn, kernel = FLOAT16_EPILOGUES[case]
    dispatches, kernel = float16_epilogue(kernel)
    x, w, bias = arrays((b, m, k), (n, k) if case == "w transposed" else (k, n), (n,), dtype=np.float16)
    got = fused_once(fn, x, w, bias, kernel=kernel, dispatches=dispatches)
    on_cpu = fn(*(vkt.tensor(a) for a in (x, w, bias)))  # the cpu device's, as a check of the values
    for g, c in zip(got, on_cpu if isinstance(on_cpu, tuple) else (on_cpu,)):
        assert g.shape == (b, m, n) and g.dtype == c.numpy().dtype
        assert_close(g.astype(np.float64), c.numpy().astype(np.float64), rtol=1e-2, atol=1e-2)


# A product of few output tiles and K of 768 or more is cut along K into slices multiplied as a batch
# (matmul.c, split-K); their sums are added elementwise, so the expression after the product fuses into
# those adds: 256 x 1024 x 256 makes 16 tiles of 64 x 64, and 4 slices 256 deep.
def test_split_product_takes_the_epilogue():
    x, w, bias = arrays((256, 1024), (1024, 256), (256,))
    (got,) = fused_once(lambda x, w, bias: (x @ w).relu() * 2, x, w, bias, kernel="add add add relu mul",
                        dispatches=2)
    xn, wn, bn = f64(x, w, bias)
    assert_close(got, np.maximum(xn @ wn, 0) * 2, rtol=1e-5, atol=1e-4)
    # with a bias: 6 operands, more push constants than lavapipe's 128 bytes, so there a kernel or two more
    (got,), stats = run(lambda x, w, bias: F.gelu(x @ w.T.T + bias), x, w, bias)
    (want,), unfused = run(lambda x, w, bias: F.gelu(x @ w.T.T + bias), x, w, bias, fused=False)
    assert same_bits(got, want) and stats["dispatches"] < unfused["dispatches"]
    assert_close(got, gelu(xn @ wn + bn), rtol=1e-4, atol=1e-4)
    # 784 = 2 x 392 (4 x 196 is too shallow): two slices; 1021 is prime and 640 short: no split
    for k, kernel, dispatches in ((784, "add relu", 2), (1021, "matmul relu", 1), (640, "matmul relu", 1)):
        x, w = arrays((256, k), (k, 256))
        (got,) = fused_once(lambda x, w: (x @ w).relu(), x, w, kernel=kernel, dispatches=dispatches)
        assert_close(got, np.maximum(f64(x)[0] @ f64(w)[0], 0), rtol=1e-5, atol=1e-4)


def test_split_product_backward():
    x, w, bias = arrays((256, 1024), (1024, 256), (256,))

    def grads(fused):
        vkt.vulkan.set_fusion(fused)
        try:
            ts = [vkt.tensor(a, device="vulkan", requires_grad=True) for a in (x, w, bias)]
            y = (ts[0] @ ts[1] + ts[2]).relu()
            y.square().sum().backward()
            return [y.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in ts]
        finally:
            vkt.vulkan.set_fusion(True)
    got = grads(True)
    for g, u in zip(got, grads(False)):
        assert same_bits(g, u)
    xn, wn, bn = f64(x, w, bias)
    y = np.maximum(xn @ wn + bn, 0)
    gz = 2 * y * (y > 0)
    for g, want in zip(got, (y, gz @ wn.T, xn.T @ gz, gz.sum(0))):
        assert_close(g, want, rtol=1e-4, atol=1e-3)


def test_batched_with_broadcast():
    x, w, bias = arrays((4, 1, 40, 24), (3, 24, 33), (3, 1, 33))
    (got,) = fused_once(lambda x, w, bias: (x @ w + bias).relu(), x, w, bias, kernel="matmul add relu")
    xn, wn, bn = f64(x, w, bias)
    assert_close(got, np.maximum(xn @ wn + bn, 0), rtol=1e-5, atol=1e-5)


def test_transposed_operands_and_bias_column():
    x, w, bias = arrays((24, 200), (130, 24), (200, 1))
    fused_once(lambda x, w, bias: F.gelu(x.T @ w.T + bias), x, w, bias, kernel="matmul add gelu")
    x, w, bias = arrays((16, 24, 200), (130, 24), (16, 1, 130))
    fused_once(lambda x, w, bias: F.gelu(x.transpose(1, 2) @ w.T + bias), x, w, bias, kernel="matmul add gelu")


def test_kept_product_is_written_by_the_same_kernel():
    x, w, bias = arrays((16, 200, 24), (24, 130), (130,))

    def fn(x, w, bias):
        h = x @ w
        return h, F.gelu(h + bias)
    h, y = fused_once(fn, x, w, bias, kernel="matmul add gelu")
    xn, wn = f64(x, w)
    assert_close(h, xn @ wn, rtol=1e-5, atol=1e-5)


def test_kept_intermediate_is_written_too():
    x, w, bias = arrays((3, 37, 19), (19, 53), (53,))

    def fn(x, w, bias):
        t = x @ w + bias
        return t, t.relu() * 2
    fused_once(fn, x, w, bias, kernel="matmul add relu mul")


def test_in_place_ops_on_the_product():
    x, w, bias = arrays((3, 37, 19), (19, 53), (53,))

    def fn(x, w, bias):
        h = x @ w
        h += bias
        return h.relu_()
    fused_once(fn, x, w, bias, kernel="matmul add relu")


def test_other_consumers_compute_the_product_alone():
    x, w, w2 = arrays((37, 19), (19, 53), (53, 11))
    xn, wn, w2n = f64(x, w, w2)
    (got,), stats = run(lambda x, w, w2: (x @ w) @ w2, x, w, w2)
    assert stats["dispatches"] == 2 and stats["fused_kernels"] == []
    assert_close(got, xn @ wn @ w2n, rtol=1e-4, atol=1e-4)
    (got,), stats = run(lambda x, w, w2: (x @ w).sum(-1), x, w, w2)
    assert_close(got, (xn @ wn).sum(-1), rtol=1e-4, atol=1e-4)
    (got,), _ = run(lambda x, w, w2: (x @ w).T + 1, x, w, w2)  # a view of it: not the product as made
    assert_close(got, (xn @ wn).T + 1, rtol=1e-5, atol=1e-5)
    (got,), _ = run(lambda x, w, w2: (x @ w)[3:7].exp(), x, w, w2)
    assert_close(got, np.exp((xn @ wn)[3:7]), rtol=1e-5, atol=1e-5)


def test_two_products_in_one_expression():
    x, w, w2 = arrays((37, 19), (19, 53), (19, 53))
    (got,) = fused_once(lambda x, w, w2: (x @ w) * (x @ w2), x, w, w2, kernel="matmul mul", dispatches=2)
    xn, wn, w2n = f64(x, w, w2)
    assert_close(got, (xn @ wn) * (xn @ w2n), rtol=1e-4, atol=1e-4)


def test_operands_written_after_the_product():
    x, w = arrays((37, 19), (19, 53))
    xn, wn = f64(x, w)
    xv, wv = vkt.tensor(x, device="vulkan"), vkt.tensor(w, device="vulkan")
    h = xv @ wv
    xv.add_(1)  # the pending product reads x: it is computed first
    y = h.relu()
    assert_close(y.cpu().numpy(), np.maximum(xn @ wn, 0), rtol=1e-5, atol=1e-5)


def test_many_operands_fall_back_to_two_kernels():
    """Past the adapter's push constants (lavapipe's 128 bytes) or bindings, the product is computed alone
    and the expression reads it: results stay the same."""
    x, w, a, b, c, d = arrays((37, 19), (19, 53), (37, 53), (37, 53), (53,), (37, 1))
    def fn(x, w, a, b, c, d):
        return ((x @ w + a) * b - c) / (d.abs() + 1) + 0.5
    (got,), stats = run(fn, x, w, a, b, c, d)
    (want,), unfused = run(fn, x, w, a, b, c, d, fused=False)
    assert same_bits(got, want)
    assert stats["dispatches"] < unfused["dispatches"]


def test_autograd_through_the_epilogue():
    x, w, bias = arrays((3, 37, 19), (19, 53), (53,))

    def grads(fused):
        vkt.vulkan.set_fusion(fused)
        try:
            ts = [vkt.tensor(a, device="vulkan", requires_grad=True) for a in (x, w, bias)]
            y = F.gelu(ts[0] @ ts[1] + ts[2]) * 3
            y.sum().backward()
            return [y.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in ts]
        finally:
            vkt.vulkan.set_fusion(True)
    for g, u in zip(grads(True), grads(False)):
        assert same_bits(g, u)


def test_fusion_off_keeps_the_unfused_kernels():
    x, w, bias = arrays((3, 37, 19), (19, 53), (53,))
    _, stats = run(lambda x, w, bias: F.gelu(x @ w + bias), x, w, bias, fused=False)
    assert stats["dispatches"] == 3 and stats["fused_kernels"] == []
