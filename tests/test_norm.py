# layer_norm, rms_norm and embedding against torch on the cpu and vulkan devices: forward values and the
# gradients of every input (torch.autograd in float64 on the same NumPy inputs is the reference), gradcheck
# and the create_graph path in float64, PyTorch's errors, and no CPU fallback for float32 on vulkan.
import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

torch = pytest.importorskip("torch")

# (input shape, normalized_shape): rows of 1, 7, 33, 1000 and 1025 elements, 0 rows, 2 normalized dims
NORM_CASES = [
    ((3, 1), (1,)),
    ((2, 3, 7), (7,)),
    ((5, 33), (33,)),
    ((4, 1000), (1000,)),
    ((3, 1025), (1025,)),
    ((0, 33), (33,)),
    ((2, 0, 7), (7,)),
    ((33,), (33,)),
    ((2, 3, 5, 7), (5, 7)),
    ((3, 4, 9), (4, 9)),
]
# |got - ref| <= atol + rtol |ref| against float64 torch, by dtype: float16 holds ~3 digits
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10), "float16": (2e-2, 3e-2)}


def rounded(a, dtype):
    """a as the dtype stores it, back in float64: the reference then sees what vkt sees."""
    return a.astype(dtype).astype(np.float64)


def arrays(shape, nshape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rounded(rng.standard_normal(shape) * 2 + 0.5, dtype)
    w = rounded(rng.standard_normal(nshape), dtype)
    b = rounded(rng.standard_normal(nshape), dtype)
    g = rounded(rng.standard_normal(shape), dtype)
    return x, w, b, g


def run_vkt(op, x, w, b, g, nshape, dtype, device, **kw):
    """op on vkt leaves (w, b None: not given): its output and the gradients of x, w, b for upstream g."""
    leaves = [None if a is None else vkt.tensor(a, dtype=getattr(vkt, dtype), device=device, requires_grad=True)
              for a in (x, w, b)]
    args = [leaves[1]] + ([leaves[2]] if op == "layer_norm" else [])
    y = getattr(vkt, op)(leaves[0], list(nshape), *args, **kw)
    y.backward(vkt.tensor(g, dtype=getattr(vkt, dtype), device=device))
    return y, [None if t is None else t.grad for t in leaves]


def run_torch(op, x, w, b, g, nshape, **kw):
    leaves = [None if a is None else torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    args = [leaves[1]] + ([leaves[2]] if op == "layer_norm" else [])
    y = getattr(torch, op)(leaves[0], list(nshape), *args, **kw)
    y.backward(torch.tensor(g, dtype=torch.float64))
    return y.detach().numpy(), [None if t is None else t.grad.numpy() for t in leaves]


# (op, which of weight and bias are given): 2-dim normalized shapes take the forms with both or neither
FORMS = [("layer_norm", "wb"), ("layer_norm", "w"), ("layer_norm", ""), ("rms_norm", "w"), ("rms_norm", "")]
FORWARD_BACKWARD = [(op, affine, shape, nshape) for op, affine in FORMS for shape, nshape in NORM_CASES
                    if len(nshape) == 1 or affine != "w"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("op,affine,shape,nshape", FORWARD_BACKWARD)
def test_norm_forward_backward(device, op, affine, shape, nshape, dtype):
    x, w, b, g = arrays(shape, nshape, dtype, seed=len(shape) * 131 + sum(shape))
    w = w if "w" in affine else None
    b = b if "b" in affine else None
    y, grads = run_vkt(op, x, w, b, g, nshape, dtype, device, eps=1e-5)
    ref, ref_grads = run_torch(op, x, w, b, g, nshape, eps=1e-5)
    rtol, atol = TOL[dtype]
    assert y.dtype == getattr(vkt, dtype) and y.shape == tuple(shape)
    assert_close(y, ref, rtol, atol)
    n = int(np.prod(nshape))
    for got, want, name in zip(grads, ref_grads, "xwb"):
        if want is None:
            assert got is None
            continue
        assert got.dtype == getattr(vkt, dtype), name
        # grad_weight and grad_bias sum over the rows
        scale = max(1, x.size // n) ** 0.5 if name != "x" else 1
        assert_close(got, want, rtol, atol * scale)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norm_half_input_float_weight(device, op):
    """A float16 input with float32 parameters: a float16 result, float32 parameter gradients (as torch)."""
    x, w, b, g = arrays((4, 33), (33,), "float16", seed=3)
    leaves = [vkt.tensor(x, dtype=vkt.float16, device=device, requires_grad=True),
              vkt.tensor(w, dtype=vkt.float32, device=device, requires_grad=True)]
    y = getattr(vkt, op)(leaves[0], [33], leaves[1])
    y.backward(vkt.tensor(g, dtype=vkt.float16, device=device))
    ty = getattr(torch, op)(torch.tensor(x, dtype=torch.float16), [33], torch.tensor(w, dtype=torch.float32))
    assert y.dtype == vkt.float16 and str(ty.dtype) == "torch.float16"
    assert leaves[1].grad.dtype == vkt.float32 and leaves[0].grad.dtype == vkt.float16
    ref, ref_grads = run_torch(op, x, w, None, g, (33,))
    assert_close(y, ref, 2e-2, 3e-2)
    assert_close(leaves[1].grad, ref_grads[1], 2e-2, 1e-1)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norm_non_contiguous_input_and_gradient(device, op):
    """A transposed, strided input and weight, and sum()'s broadcast gradient, are made dense first."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((10, 6)), rng.standard_normal(10)
    got, ref = [], []
    for m, make, out in [(vkt, lambda a: vkt.tensor(a, dtype=vkt.float32, device=device, requires_grad=True), got),
                         (torch, lambda a: torch.tensor(a, requires_grad=True), ref)]:
        xt, wt = make(x), make(w)
        y = getattr(m, op)(xt.t()[:, ::2], (5,), wt[::2])
        y.sum().backward()
        out += [y.detach(), xt.grad, wt.grad]
    for a, r in zip(got, ref):
        assert_close(a, r.numpy(), 1e-5, 1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_rms_norm_default_eps_is_the_dtypes_epsilon(device, dtype):
    x = np.full((2, 8), 1e-2)  # small values: eps matters
    got = vkt.rms_norm(vkt.tensor(x, dtype=getattr(vkt, dtype), device=device), [8])
    ref = torch.rms_norm(torch.tensor(x, dtype=getattr(torch, dtype)), [8])
    assert_close(got, ref.double().numpy(), 1e-3, 1e-3)


def test_norm_gradcheck(device):
    rng = np.random.default_rng(7)
    x, w, b = (vkt.tensor(rng.standard_normal(s), dtype=vkt.float64, device=device, requires_grad=True)
               for s in [(3, 2, 5), (2, 5), (2, 5)])
    assert vkt.autograd.gradcheck(lambda x, w, b: vkt.layer_norm(x, (2, 5), w, b), (x, w, b))
    assert vkt.autograd.gradcheck(lambda x, w: vkt.rms_norm(x, (5,), w[0], eps=1e-6), (x, w))


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norm_double_backward(device, op):
    """With create_graph the backward is composed of differentiable ops: second derivatives as torch's."""
    rng = np.random.default_rng(11)
    x, w, b, v = (rng.standard_normal(s) for s in [(3, 6), (6,), (6,), (3, 6)])
    extra = lambda m, t: [t] if op == "layer_norm" else []  # noqa: E731
    got = []
    for m, make in [(vkt, lambda a: vkt.tensor(a, dtype=vkt.float64, device=device, requires_grad=True)),
                    (torch, lambda a: torch.tensor(a, requires_grad=True))]:
        xt, wt, bt = make(x), make(w), make(b)
        y = getattr(m, op)(xt, [6], wt, *extra(m, bt))
        gx, gw = m.autograd.grad((y * y * make(v)).sum(), [xt, wt], create_graph=True)
        gx2, gw2 = m.autograd.grad((gx * gx).sum() + (gw * gw).sum(), [xt, wt])
        got.append([to_numpy(t.detach()) for t in (gx, gw, gx2, gw2)])
    for a, r in zip(*got):
        assert_close(a, r, 1e-8, 1e-8)


def test_norm_grad_fn_names(device):
    x = vkt.randn(2, 4, device=device, requires_grad=True)
    assert vkt.layer_norm(x, [4]).grad_fn.name() == "NativeLayerNormBackward0"
    assert vkt.rms_norm(x, [4]).grad_fn.name() == "FusedRmsNormBackward0"
    with vkt.no_grad():
        assert vkt.layer_norm(x, [4]).grad_fn is None


NORM_ERRORS = [
    (lambda m, x: m.layer_norm(x, [3]), RuntimeError,
     r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\], but got input of size\[2, 3, 4\]"),
    (lambda m, x: m.rms_norm(x, [5, 4]), RuntimeError,
     r"Given normalized_shape=\[5, 4\], expected input with shape \[\*5, 4\], but got input of size\[2, 3, 4\]"),
    (lambda m, x: m.layer_norm(x, [2, 3, 4, 5]), RuntimeError, r"expected input with shape \[\*, 2, 3, 4, 5\]"),
    (lambda m, x: m.layer_norm(x, []), RuntimeError, "Expected normalized_shape to be at least 1-dimensional"),
    (lambda m, x: m.layer_norm(x, [4], x.new_ones(3)), RuntimeError,
     r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[3\] and "
     r"normalized_shape = \[4\]"),
    (lambda m, x: m.layer_norm(x, [4], None, x.new_ones(3)), RuntimeError,
     r"Expected bias to be of same shape as normalized_shape, but got bias of shape \[3\]"),
    (lambda m, x: m.rms_norm(x, [4], x.new_ones(3)), RuntimeError, "Expected weight to be of same shape"),
    (lambda m, x: m.layer_norm(x.int(), [4]), NotImplementedError,
     "\"LayerNormKernelImpl\" not implemented for 'Int'"),
    (lambda m, x: m.rms_norm(x.long(), [4]), NotImplementedError, "\"rms_norm\" not implemented for 'Long'"),
    (lambda m, x: m.layer_norm(x, [4], x.new_ones(4, dtype=m.float16)), RuntimeError,
     "mixed dtype \\(CPU\\): expect parameter to have scalar type of Float"),
    (lambda m, x: m.layer_norm(x.double(), [4], x.new_ones(4)), RuntimeError,
     "mixed dtype \\(CPU\\): all inputs must share same datatype."),
    (lambda m, x: m.layer_norm(x, 4), TypeError, "must be tuple of ints, not int"),
]


@pytest.mark.parametrize("k", range(len(NORM_ERRORS)))
def test_norm_errors(device, k):
    fn, exc, msg = NORM_ERRORS[k]
    with pytest.raises(exc, match=msg):
        fn(torch, torch.zeros(2, 3, 4))
    with pytest.raises(exc, match=msg):
        fn(vkt, vkt.zeros(2, 3, 4, device=device))


def test_norm_parameters_on_another_device(dev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        vkt.layer_norm(vkt.zeros(2, 4, device=dev), [4], vkt.ones(4))


# ---- embedding ----

# (number of rows, dim, index values (a nested list or a number), padding_idx, scale_grad_by_freq)
EMBEDDING_CASES = [
    (10, 3, [1, 2, 4, 5], -1, False),
    (10, 3, [[1, 2, 1], [9, 1, 0]], -1, False),
    (10, 3, 7, -1, False),
    (6, 5, [[0, 2, 0, 2], [5, 2, 2, 3]], 2, False),
    (6, 5, [[0, 2, 0, 2], [5, 2, 2, 3]], -1, True),
    (6, 5, [[0, 2, 0, 2], [5, 2, 2, 3]], 0, True),
    (7, 33, [[[1, 1], [6, 0]], [[3, 3], [3, 1]]], 3, False),
    (4, 2, [], -1, False),
]


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("case", range(len(EMBEDDING_CASES)))
def test_embedding_forward_backward(device, case, dtype, index_dtype):
    num, dim, values, pad, scale = EMBEDDING_CASES[case]
    rng = np.random.default_rng(case)
    w = rounded(rng.standard_normal((num, dim)), dtype)
    idx = np.array(values, dtype=index_dtype)
    g = rounded(rng.standard_normal(idx.shape + (dim,)), dtype)
    wv = vkt.tensor(w, dtype=getattr(vkt, dtype), device=device, requires_grad=True)
    y = vkt.embedding(wv, vkt.tensor(idx, device=device), pad, scale)
    y.backward(vkt.tensor(g, dtype=getattr(vkt, dtype), device=device))
    wt = torch.tensor(w, requires_grad=True)
    ty = torch.embedding(wt, torch.tensor(idx), pad, scale)
    ty.backward(torch.tensor(g))
    assert y.dtype == getattr(vkt, dtype) and y.shape == tuple(ty.shape)
    assert_close(y, ty.detach().numpy(), 0, 0)
    rtol, atol = TOL[dtype]
    assert_close(wv.grad, wt.grad.numpy(), rtol, atol)
    assert y.grad_fn.name() == "EmbeddingBackward0"


def test_embedding_gradcheck_and_double_backward(device):
    rng = np.random.default_rng(2)
    w = vkt.tensor(rng.standard_normal((5, 3)), dtype=vkt.float64, device=device, requires_grad=True)
    idx = vkt.tensor([[0, 4, 4], [2, 0, 1]], device=device)
    # padding_idx and scale_grad_by_freq change the gradient on purpose: gradcheck takes the plain one
    assert vkt.autograd.gradcheck(lambda w: vkt.embedding(w, idx), (w,))
    gw, = vkt.autograd.grad((vkt.embedding(w, idx) ** 2).sum(), [w], create_graph=True)
    gw2, = vkt.autograd.grad(gw.sum(), [w])
    counts = np.bincount(to_numpy(idx).ravel(), minlength=5)[:, None]
    assert_close(gw2, np.broadcast_to(2.0 * counts, (5, 3)), 1e-12, 1e-12)


EMBEDDING_ERRORS = [
    (lambda m, w: m.embedding(w, m.tensor([1.0])), RuntimeError,
     r"Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
     r"torch.FloatTensor instead \(while checking arguments for embedding\)"),
    (lambda m, w: m.embedding(w, m.tensor([5])), IndexError, "index out of range in self"),
    (lambda m, w: m.embedding(w, m.tensor([[0, -1]])), IndexError, "index out of range in self"),
    (lambda m, w: m.embedding(w[0], m.tensor([1])), RuntimeError, "'weight' must be 2-D"),
]


@pytest.mark.parametrize("k", range(len(EMBEDDING_ERRORS)))
def test_embedding_errors(device, k):
    fn, exc, msg = EMBEDDING_ERRORS[k]
    with pytest.raises(exc, match=msg):
        fn(torch, torch.zeros(5, 3))

    class OnDevice:  # vkt with tensors made on the device under test
        def __getattr__(self, name):
            return getattr(vkt, name)

        def tensor(self, v):
            return vkt.tensor(v, device=device)

    with pytest.raises(exc, match=msg):
        fn(OnDevice(), vkt.zeros(5, 3, device=device))


def test_embedding_index_on_another_device(dev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        vkt.embedding(vkt.zeros(5, 3, device=dev), vkt.tensor([1]))


def test_embedding_sparse_is_refused(device):
    with pytest.raises(RuntimeError, match="vkt has no sparse tensors"):
        vkt.embedding(vkt.zeros(5, 3, device=device), vkt.tensor([1], device=device), sparse=True)


# ---- the shader path ----

def test_float32_takes_no_fallback(dev):
    rng = np.random.default_rng(0)
    vkt.vulkan.reset_fallback_stats()
    for shape, nshape in NORM_CASES:
        x = vkt.tensor(rng.standard_normal(shape), dtype=vkt.float32, device=dev, requires_grad=True)
        w = vkt.ones(*nshape, device=dev, requires_grad=True)
        b = vkt.zeros(*nshape, device=dev, requires_grad=True)
        (vkt.layer_norm(x, nshape, w, b) * 2).sum().backward()
        (vkt.rms_norm(x, nshape, w) * 2).sum().backward()
    w = vkt.ones(6, 5, device=dev, requires_grad=True)
    vkt.embedding(w, vkt.tensor([[1, 2, 2], [5, 0, 1]], device=dev), 2, True).sum().backward()
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("n", [40, 3000])
def test_long_rows_and_many_rows(device, n):
    """Rows past the register cache (8 x 256) are read again from memory; many rows give many blocks to the
    grad_weight column sums."""
    rows = 120000 // n
    x, w, b, g = arrays((rows, n), (n,), "float32", seed=n)
    y, grads = run_vkt("layer_norm", x, w, b, g, (n,), "float32", device)
    ref, ref_grads = run_torch("layer_norm", x, w, b, g, (n,))
    assert_close(y, ref, 1e-4, 1e-4)
    for got, want in zip(grads, ref_grads):
        assert_close(got, want, 1e-4, 1e-3)


@pytest.mark.parametrize("start", [0, 3, 4])
def test_norm_of_a_view_at_an_offset(device, start):
    """Rows of a multiple of 4 move 4 elements a load where every offset allows it, else one at a time."""
    flat = np.random.default_rng(start).standard_normal(80)
    w = vkt.tensor(np.linspace(0.5, 2, 36), dtype=vkt.float32, device=device)
    x = vkt.tensor(flat, dtype=vkt.float32, device=device)[start:start + 72].reshape(2, 36)
    ref = torch.layer_norm(torch.tensor(flat[start:start + 72]).reshape(2, 36), [36], torch.tensor(w.cpu().numpy(), dtype=torch.float64))
    assert_close(vkt.layer_norm(x, [36], w), ref.numpy(), 1e-5, 1e-5)
