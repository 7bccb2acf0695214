# NumPy-style utilities composed in python/vkt/functional.py (diff, bincount, histc, histogram(dd), isin,
# cartesian_prod, combinations, cov, corrcoef, logcumsumexp, trapezoid, cumulative_trapezoid, block_diag, vander,
# broadcast_shapes)
# against torch on the cpu and vulkan devices, driven by tables of cases: values and dtypes, gradients, errors; a
# few against NumPy; and no CPU fallback for float32 on vulkan.
import math
import warnings

import numpy as np
import pytest

import vkt
from conftest import assert_close, raised, to_numpy

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A7 = RNG.uniform(-3, 3, 7)
A35 = RNG.uniform(-3, 3, (3, 5))
A234 = RNG.uniform(-3, 3, (2, 3, 4))
W5 = RNG.uniform(0.5, 2, 5)
INTS7 = np.array([3, 0, 5, 3, 1, 0, 3])
TOL = {"float32": (2e-5, 2e-6), "float64": (1e-10, 1e-12)}


def maker(lib, device):
    """T(values, dtype): a tensor of lib (vkt on device, torch on cpu) holding the same values."""
    def T(values, dtype="float32", grad=False):
        if lib is vkt:
            return vkt.tensor(np.asarray(values), dtype=getattr(vkt, dtype), device=device, requires_grad=grad)
        return torch.tensor(np.asarray(values), dtype=getattr(torch, dtype), requires_grad=grad)
    return T


def dtype_name(t):
    return str(t.dtype).split(".")[-1]


def compare(got, ref, dtype="float32"):
    assert dtype_name(got) == dtype_name(ref)
    rtol, atol = TOL.get(dtype_name(ref), TOL["float32" if dtype == "float32" else "float64"])
    assert_close(got, ref.detach().numpy(), rtol=rtol, atol=atol)


# (name, call(lib, T, dtype), dtypes): lib is vkt or torch, T makes its tensors on the device under test
FLOATS = ["float32", "float64"]
NUMERIC = FLOATS + ["int32", "int64", "uint8"]
FORWARD = [
    ("diff", lambda lib, T, d: lib.diff(T(A35 * 3, d)), NUMERIC),
    ("diff_n2_dim0", lambda lib, T, d: T(A35 * 3, d).diff(n=2, dim=0), NUMERIC),
    ("diff_n_large", lambda lib, T, d: lib.diff(T(A7, d), n=9), FLOATS),
    ("diff_n0", lambda lib, T, d: lib.diff(T(A7, d), n=0), FLOATS),
    ("diff_pre_app", lambda lib, T, d: lib.diff(T(A35, d), 2, 0, prepend=T(A35[:1], d), append=T(A35[:2] * 2, d)),
     FLOATS + ["int64"]),
    ("diff_promote", lambda lib, T, d: lib.diff(T(INTS7, "int64"), prepend=T([0.5], d)), FLOATS),
    ("diff_bool", lambda lib, T, d: lib.diff(T(A7 > 0, "bool"), n=2), ["bool"]),
    ("diff_empty", lambda lib, T, d: lib.diff(T(np.zeros((2, 0)), d)), FLOATS),
    ("bincount", lambda lib, T, d: lib.bincount(T(INTS7, d)), ["int32", "int64", "uint8"]),
    ("bincount_minlength", lambda lib, T, d: T(INTS7, d).bincount(minlength=9), ["int64"]),
    ("bincount_weights", lambda lib, T, d: lib.bincount(T(INTS7, "int64"), T(A7, d)), FLOATS + ["int32"]),
    ("bincount_empty", lambda lib, T, d: lib.bincount(T([], "int64"), T([], d), minlength=3), FLOATS),
    ("histc", lambda lib, T, d: lib.histc(T(A234, d), bins=7), FLOATS),
    ("histc_range", lambda lib, T, d: T(A35, d).histc(4, -1.5, 2), FLOATS),
    ("histc_equal_range", lambda lib, T, d: lib.histc(T(A7, d), bins=5, min=1, max=1), FLOATS),
    ("histc_constant", lambda lib, T, d: lib.histc(T([2.0, 2.0, 2.0], d), bins=4), FLOATS),
    ("histc_nan_outside", lambda lib, T, d: lib.histc(T([0.1, math.nan, 5, -5, 1, 0.5], d), bins=3, max=1), FLOATS),
    ("histc_0d", lambda lib, T, d: lib.histc(T(2.5, d), bins=3), FLOATS),
    ("histc_empty", lambda lib, T, d: lib.histc(T(np.zeros(0), d), bins=3), FLOATS),
    ("isin", lambda lib, T, d: lib.isin(T(INTS7, d), T([3, 4, 1, 3], d)), NUMERIC),
    ("isin_invert", lambda lib, T, d: lib.isin(T(INTS7.reshape(7, 1), d), T([[3, 4], [1, 7]], d), invert=True),
     NUMERIC),
    ("isin_promote", lambda lib, T, d: lib.isin(T(INTS7, "int64"), T([3.0, 0.5, 1.0], d)), FLOATS),
    ("isin_float", lambda lib, T, d: lib.isin(T([0.5, math.nan, -0.0, 2], d), T([0.0, math.nan, 2, 7], d)),
     FLOATS),
    ("isin_scalar_test", lambda lib, T, d: lib.isin(T(INTS7, d), 3), NUMERIC),
    ("isin_scalar_test_float", lambda lib, T, d: lib.isin(T(INTS7, d), 3.5, invert=True), NUMERIC),
    ("isin_scalar_elem", lambda lib, T, d: lib.isin(5, T(INTS7, d)), NUMERIC),
    ("isin_0d", lambda lib, T, d: lib.isin(T(1, d), T(INTS7, d)), NUMERIC),
    ("isin_empty", lambda lib, T, d: lib.isin(T(INTS7, d), T([], d)), FLOATS),
    ("cartesian_prod", lambda lib, T, d: lib.cartesian_prod(T(A7[:3], d), T(A7[3:5], d), T(A7[5:], d)), NUMERIC),
    ("cartesian_prod_one", lambda lib, T, d: lib.cartesian_prod(T(A7, d)), FLOATS),
    ("cartesian_prod_empty", lambda lib, T, d: lib.cartesian_prod(T(A7, d), T([], d)), FLOATS),
    ("combinations", lambda lib, T, d: lib.combinations(T(A7[:5], d)), NUMERIC),
    ("combinations_r3", lambda lib, T, d: lib.combinations(T(A7[:5], d), r=3), FLOATS),
    ("combinations_repl", lambda lib, T, d: lib.combinations(T(A7[:4], d), 3, with_replacement=True), NUMERIC),
    ("combinations_r0", lambda lib, T, d: lib.combinations(T(A7, d), r=0), FLOATS),
    ("combinations_r1", lambda lib, T, d: lib.combinations(T(A7, d), r=1), FLOATS),
    ("combinations_too_long", lambda lib, T, d: lib.combinations(T(A7[:2], d), r=3), FLOATS),
    ("combinations_empty", lambda lib, T, d: lib.combinations(T([], d)), FLOATS),
    ("cov", lambda lib, T, d: lib.cov(T(A35 * 3, d)), NUMERIC),
    ("cov_1d", lambda lib, T, d: T(A7, d).cov(correction=0), FLOATS),
    ("cov_weights", lambda lib, T, d: lib.cov(T(A35, d), fweights=T([1, 3, 0, 2, 1], "int64"), aweights=T(W5, d)),
     FLOATS),
    ("cov_fweights", lambda lib, T, d: lib.cov(T(A35, d), correction=2, fweights=T([1, 3, 0, 2, 1], "int32")),
     FLOATS),
    ("cov_aweights", lambda lib, T, d: lib.cov(T(A35, d), aweights=T(W5, d)), FLOATS),
    ("cov_no_rows", lambda lib, T, d: lib.cov(T(np.zeros((0, 3)), d)), FLOATS),
    ("corrcoef", lambda lib, T, d: lib.corrcoef(T(A35 * 3, d)), NUMERIC),
    ("corrcoef_1d", lambda lib, T, d: T(A7, d).corrcoef(), FLOATS),
    ("logcumsumexp", lambda lib, T, d: lib.logcumsumexp(T(A234 * 10, d), 1), FLOATS),
    ("logcumsumexp_long", lambda lib, T, d: T(np.linspace(-900, 50, 37), d).logcumsumexp(-1), FLOATS),
    ("logcumsumexp_inf_nan", lambda lib, T, d: lib.logcumsumexp(T([-math.inf, math.inf, 1, math.nan, 1], d), 0),
     FLOATS),
    ("logcumsumexp_all_neg_inf", lambda lib, T, d: lib.logcumsumexp(T([-math.inf, -math.inf, 0.5], d), 0), FLOATS),
    ("logcumsumexp_0d", lambda lib, T, d: lib.logcumsumexp(T(1.5, d), 0), FLOATS),
    ("logcumsumexp_empty", lambda lib, T, d: lib.logcumsumexp(T(np.zeros((2, 0)), d), 1), FLOATS),
    ("trapezoid", lambda lib, T, d: lib.trapezoid(T(A35 * 3, d)), NUMERIC),
    ("trapezoid_dx", lambda lib, T, d: lib.trapezoid(T(A234 * 3, d), dx=0.25, dim=1), NUMERIC),
    ("trapezoid_x", lambda lib, T, d: lib.trapezoid(T(A35 * 3, d), T(np.cumsum(W5) * 3, d)), NUMERIC),
    ("trapezoid_x_broadcast", lambda lib, T, d: lib.trapezoid(T(A234, d), T(A234[0] * 2, d), dim=2), FLOATS),
    ("trapezoid_x_dim0", lambda lib, T, d: lib.trapezoid(T(A35, d), x=T([0, 1, 3], d), dim=0), FLOATS),
    ("trapezoid_empty", lambda lib, T, d: lib.trapezoid(T(np.zeros((2, 0)), d)), FLOATS + ["int64"]),
    ("trapezoid_one", lambda lib, T, d: lib.trapezoid(T(np.ones((2, 1)), d), T([1.0], d)), FLOATS),
    ("trapz", lambda lib, T, d: lib.trapz(T(A35, d), dx=2), FLOATS),
    ("cumulative_trapezoid", lambda lib, T, d: lib.cumulative_trapezoid(T(A35 * 3, d)), NUMERIC),
    ("cumulative_trapezoid_x", lambda lib, T, d: lib.cumulative_trapezoid(T(A35, d), T([0, 1, 3], d), dim=0),
     NUMERIC),
    ("cumulative_trapezoid_dx", lambda lib, T, d: lib.cumulative_trapezoid(T(A234, d), dx=3, dim=-2), FLOATS),
    ("cumulative_trapezoid_short", lambda lib, T, d: lib.cumulative_trapezoid(T(np.ones((2, 1)), d)), FLOATS),
    ("block_diag", lambda lib, T, d: lib.block_diag(T(A35, d), T(A7[:3], d), T(2.5, d), T(np.ones((2, 1)), d)),
     NUMERIC),
    ("block_diag_promote", lambda lib, T, d: lib.block_diag(T(INTS7, "int64"), T(A35, d), T(1.5, "float64")),
     FLOATS),
    ("block_diag_empty_blocks", lambda lib, T, d: lib.block_diag(T(np.zeros((0, 2)), d), T(np.zeros((2, 0)), d)),
     FLOATS),
    ("vander", lambda lib, T, d: lib.vander(T(A7[:5], d)), NUMERIC),
    ("vander_increasing", lambda lib, T, d: lib.vander(T(A7, d), N=4, increasing=True), NUMERIC + ["bool"]),
    ("vander_n01", lambda lib, T, d: lib.cat([lib.vander(T(A7, d), N=0), lib.vander(T(A7, d), N=1)], 1), FLOATS),
    ("vander_empty", lambda lib, T, d: lib.vander(T([], d), N=3), FLOATS),
]
CASES = [(name, call, d) for name, call, dtypes in FORWARD for d in dtypes]


@pytest.mark.parametrize("name,call,dtype", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_forward_matches_torch(device, name, call, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = call(torch, maker(torch, "cpu"), dtype)
        got = call(vkt, maker(vkt, device), dtype)
    assert got.device.type == device and got.requires_grad == ref.requires_grad
    compare(got, ref, dtype)


# torch.histogram: (name, call(lib, T, dtype)) -> (hist, bin_edges). Values at the edges of equal bins (A7 * 2 rounded
# to halves over [-6, 6] in 8 bins) test the interpolated bin against its neighbours; float weights sum in another
# order than torch's kernel, so hist is compared within a tolerance.
EDGY = np.round(A7 * 4) / 2
HISTOGRAM = [
    ("bins", lambda lib, T, d: lib.histogram(T(A234, d), 7)),
    ("default_bins", lambda lib, T, d: lib.histogram(T(A35, d))),
    ("range", lambda lib, T, d: lib.histogram(T(A35, d), 4, range=(-1.5, 2.0))),
    ("range_list_ints", lambda lib, T, d: lib.histogram(T(A35, d), 3, range=[-2, 2])),
    ("on_edges", lambda lib, T, d: lib.histogram(T(np.concatenate([EDGY, [-6, 6, 0.75, 1.5]]), d), 8, range=(-6, 6))),
    ("thirds_on_edges", lambda lib, T, d: lib.histogram(T(np.arange(10) / 3, d), 9)),
    ("constant", lambda lib, T, d: lib.histogram(T([2.0, 2.0, 2.0], d), 4)),
    ("empty", lambda lib, T, d: lib.histogram(T(np.zeros((0, 3)), d), 3)),
    ("zero_d", lambda lib, T, d: lib.histogram(T(2.5, d), 2)),
    ("nan_outside", lambda lib, T, d: lib.histogram(T([0.1, math.nan, 5, -5, 1, 0.5], d), 3, range=(0, 1))),
    ("weight", lambda lib, T, d: lib.histogram(T(A35, d), 4, weight=T(A35 * A35, d))),
    ("weight_2d", lambda lib, T, d: lib.histogram(T(A7, d), 3, weight=T(W5[:1].repeat(7).reshape(7, 1), d))),
    ("density", lambda lib, T, d: lib.histogram(T(A234, d), 5, density=True)),
    ("density_weight", lambda lib, T, d: lib.histogram(T(A35, d), 3, weight=T(A35 + 3, d), density=True)),
    ("density_nothing", lambda lib, T, d: lib.histogram(T(A7, d), 2, range=(10, 11), density=True)),
    ("edges", lambda lib, T, d: lib.histogram(T(A234, d), T([-3, -1, 0, 0.5, 2, 3], d))),
    ("edges_hit", lambda lib, T, d: lib.histogram(T(EDGY, d), T([-2, -0.5, 0, 1.5], d), weight=T(A7, d))),
    ("edges_one_bin", lambda lib, T, d: lib.histogram(T(A7, d), T([0.0, 1.0], d))),
    ("edges_descending", lambda lib, T, d: lib.histogram(T(A7, d), T([2.0, 1.0], d))),
    ("edges_density", lambda lib, T, d: lib.histogram(T(A35, d), T([-2, 0, 0.5, 3], d), density=True)),
    ("method", lambda lib, T, d: T(A35, d).histogram(3, range=(0, 3))),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,call", HISTOGRAM, ids=[h[0] for h in HISTOGRAM])
def test_histogram_matches_torch(device, name, call, dtype):
    (ref, ref_edges), result = call(torch, maker(torch, "cpu"), dtype), call(vkt, maker(vkt, device), dtype)
    got, edges = result
    assert type(result).__name__ == "histogram" and got.device.type == edges.device.type == device
    compare(edges, ref_edges, dtype)
    compare(got, ref, dtype)


P52 = np.round(RNG.uniform(-2, 2, (5, 2)) * 2) / 2  # points, some on the edges of equal bins
P423 = RNG.uniform(-3, 3, (4, 2, 3))
HISTOGRAMDD = [
    ("bins", lambda lib, T, d: lib.histogramdd(T(P52, d), 3)),
    ("bins_3d", lambda lib, T, d: lib.histogramdd(T(P423, d), 4)),
    ("bins_each", lambda lib, T, d: lib.histogramdd(T(P423, d), [2, 3, True])),
    ("range", lambda lib, T, d: lib.histogramdd(T(P52, d), (2, 4), range=[-1, 1, -2.0, 2.0])),
    ("weight", lambda lib, T, d: lib.histogramdd(T(P423, d), 2, weight=T(P423[..., 0] + 3, d))),
    ("density", lambda lib, T, d: lib.histogramdd(T(P52, d), [2, 3], density=True)),
    ("density_nothing", lambda lib, T, d: lib.histogramdd(T(P52, d), 2, range=[5, 6, 0, 1], density=True)),
    ("edges", lambda lib, T, d: lib.histogramdd(T(P52, d), [T([-2, 0, 0.5, 2], d), T([-1, 1], d)])),
    ("edges_range_ignored", lambda lib, T, d: lib.histogramdd(T(P52, d), [T([-2, 0, 2], d), T([-2, 2], d)],
                                                               range=[0, 1, 0, 1])),
    ("edges_density", lambda lib, T, d: lib.histogramdd(T(P52, d), (T([-2, 0, 3], d), T([-2, -1, 2], d)),
                                                         weight=T(P52[:, 0] + 5, d), density=True)),
    ("one_dim", lambda lib, T, d: lib.histogramdd(T(A7.reshape(7, 1), d), 4)),
    ("empty", lambda lib, T, d: lib.histogramdd(T(np.zeros((0, 2)), d), 2)),
    ("no_dims", lambda lib, T, d: lib.histogramdd(T(np.zeros((3, 0)), d), 2)),
    ("one_point_0d_weight", lambda lib, T, d: lib.histogramdd(T(P52[:1], d), 2, weight=T(2.0, d))),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,call", HISTOGRAMDD, ids=[h[0] for h in HISTOGRAMDD])
def test_histogramdd_matches_torch(device, name, call, dtype):
    (ref, ref_edges), result = call(torch, maker(torch, "cpu"), dtype), call(vkt, maker(vkt, device), dtype)
    got, edges = result
    assert type(result).__name__ == "histogramdd" and type(edges) is tuple and len(edges) == len(ref_edges)
    for e, ref_e in zip(edges, ref_edges):
        compare(e, ref_e, dtype)
    compare(got, ref, dtype)


def test_histogram_outputs_have_no_derivative(device):
    """As torch's: both outputs require grad where input or weight does, and backward through them raises."""
    x = vkt.tensor(A7, device=device, requires_grad=True)
    for hist, edges in (vkt.histogram(x, 3), vkt.histogram(x.detach(), 3, weight=x)):
        assert hist.requires_grad and hist.grad_fn.name() == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
            hist.sum().backward()
    assert not vkt.histogram(x.detach(), 3).hist.requires_grad


def test_empty_call_and_broadcast_shapes():
    assert tuple(vkt.block_diag().shape) == (1, 0) and vkt.block_diag().dtype == vkt.float32
    for shapes in [(), (3,), ((2, 1), (3,)), ((5, 1, 3), [4, 1], 1), ((0,), (1,)), (None, (2, 0, 1), (7,)),
                   ((1, 1, 1), (2,), (3, 1))]:
        assert vkt.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))


def test_cov_warns_as_torch_for_no_degrees_of_freedom(device):
    a = A35[:, :1]
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0") as got:
        c = vkt.cov(vkt.tensor(a, device=device))
    with pytest.warns(UserWarning) as ref:
        r = torch.cov(torch.tensor(a))
    assert str(got[0].message) in str(ref[0].message)
    assert_close(c, r.numpy())


def test_no_gradient_where_torch_has_none(device):
    w = vkt.tensor(A7, device=device, requires_grad=True)
    assert not vkt.bincount(vkt.tensor(INTS7, device=device), w).requires_grad
    assert not vkt.histc(w).requires_grad


# (name, call(lib, T) -> output; its float64 leaves are made with grad=True)
GRADS = [
    ("logcumsumexp", lambda lib, T: lib.logcumsumexp(T(A234 * 4, grad=True), 1)),
    ("logcumsumexp_wide", lambda lib, T: T(np.linspace(-60, 30, 13), grad=True).logcumsumexp(0)),
    ("diff", lambda lib, T: lib.diff(T(A35, grad=True), 2, 0, prepend=T(A35[:1], grad=True))),
    ("cov", lambda lib, T: lib.cov(T(A35, grad=True), fweights=T([1, 3, 0, 2, 1], "int64"),
                                   aweights=T(W5, grad=True))),
    ("cov_1d", lambda lib, T: lib.cov(T(A7, grad=True))),
    ("trapezoid_x", lambda lib, T: lib.trapezoid(T(A35, grad=True), T(np.cumsum(W5), grad=True))),
    ("trapezoid_dx", lambda lib, T: lib.trapezoid(T(A234, grad=True), dx=0.5, dim=0)),
    ("cumulative_trapezoid", lambda lib, T: lib.cumulative_trapezoid(T(A35, grad=True), T([0, 1, 3], grad=True),
                                                                     dim=0)),
    ("cumulative_trapezoid_dx", lambda lib, T: lib.cumulative_trapezoid(T(A35, grad=True), dx=2)),
    ("block_diag", lambda lib, T: lib.block_diag(T(A35, grad=True), T(A7[:2], grad=True), T(1.5, grad=True))),
    ("cartesian_prod", lambda lib, T: lib.cartesian_prod(T(A7[:3], grad=True), T(A7[3:], grad=True))),
    ("combinations", lambda lib, T: lib.combinations(T(A7[:5], grad=True), 3)),
    ("combinations_repl", lambda lib, T: lib.combinations(T(A7[:4], grad=True), with_replacement=True)),
]


def leaves_and_output(call, lib, device, dtype):
    leaves = []
    T = maker(lib, device)

    def tracked(values, d=dtype, grad=False):
        t = T(values, d, grad)
        if grad:
            leaves.append(t)
        return t

    return call(lib, tracked), leaves


def check_grads(call, device, dtype, ref_call=None):
    out, leaves = leaves_and_output(call, vkt, device, dtype)
    ref, ref_leaves = leaves_and_output(ref_call or call, torch, "cpu", dtype)
    weight = np.random.default_rng(1).standard_normal(tuple(ref.shape))
    (out * vkt.tensor(weight, dtype=out.dtype, device=device)).sum().backward()
    (ref * torch.tensor(weight, dtype=ref.dtype)).sum().backward()
    for got, want in zip(leaves, ref_leaves):
        compare(got.grad, want.grad, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,call", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_match_torch(device, dtype, name, call):
    check_grads(call, device, dtype)


def test_corrcoef_gradient_matches_torch(device):
    """Off the diagonal only: whether a diagonal 1 rounds above 1 (and clip zeroes its gradient) is rounding's
    choice, not the op's."""
    weight = 1 - np.eye(3)
    x, tx = vkt.tensor(A35, device=device, requires_grad=True), torch.tensor(A35, requires_grad=True)
    (vkt.corrcoef(x) * vkt.tensor(weight, device=device)).sum().backward()
    (torch.corrcoef(tx) * torch.tensor(weight)).sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_vander_gradient_matches_torch_pow(device):
    """torch 2.13's vander backward fails (it writes in place into what its cumprod saved); its gradient is that
    of x ** k, which the reference computes."""
    def ref(lib, T):
        x = T(np.append(A7[:4], 0.0), grad=True)
        return x.unsqueeze(1) ** torch.arange(4, -1, -1, dtype=torch.float64) if lib is torch else lib.vander(x)

    check_grads(ref, device, "float64")


def test_float32_takes_no_fallback_on_vulkan(dev):
    """Every float32 case, forward and backward, runs in shaders on vulkan."""
    taken = {}
    def hist_of(call):
        return lambda lib, T, d: call(lib, T, d)[0]

    histograms = [(n, hist_of(c), "float32") for n, c in HISTOGRAM + HISTOGRAMDD]
    for name, call, dtype in CASES + histograms + [(n, c, "float32") for n, c in GRADS]:
        if dtype != "float32":
            continue
        vkt.vulkan.reset_fallback_stats()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if call.__code__.co_argcount == 3:
                call(vkt, maker(vkt, dev), dtype)
            else:
                out, _ = leaves_and_output(call, vkt, dev, dtype)
                out.sum().backward()
        vkt.vulkan.synchronize()
        if vkt.vulkan.fallback_stats():
            taken[name] = vkt.vulkan.fallback_stats()
    assert taken == {}


NUMPY = [
    ("diff", lambda T: vkt.diff(T(A35, "float64"), 2, 0), lambda: np.diff(A35, 2, 0)),
    ("bincount", lambda T: vkt.bincount(T(INTS7, "int64"), T(A7, "float64")), lambda: np.bincount(INTS7, A7)),
    ("histc", lambda T: vkt.histc(T(A234, "float64"), 6, -2, 2), lambda: np.histogram(A234, 6, (-2, 2))[0]),
    ("histogram", lambda T: vkt.cat(vkt.histogram(T(A234, "float64"), 6, weight=T(A234 + 3, "float64"))),
     lambda: np.concatenate(np.histogram(A234, 6, weights=A234 + 3))),
    ("histogram_edges", lambda T: vkt.histogram(T(A234, "float64"), T([-3, -1, 0.5, 3], "float64"), density=True)[0],
     lambda: np.histogram(A234, [-3, -1, 0.5, 3], density=True)[0]),
    ("histogramdd", lambda T: vkt.histogramdd(T(P423.reshape(-1, 3), "float64"), [2, 3, 4], density=True)[0],
     lambda: np.histogramdd(P423.reshape(-1, 3), [2, 3, 4], density=True)[0]),
    ("isin", lambda T: vkt.isin(T(INTS7, "int64"), T([0, 5], "int64"), invert=True),
     lambda: np.isin(INTS7, [0, 5], invert=True)),
    ("cov", lambda T: vkt.cov(T(A35, "float64"), aweights=T(W5, "float64")), lambda: np.cov(A35, aweights=W5)),
    ("corrcoef", lambda T: vkt.corrcoef(T(A35, "float64")), lambda: np.corrcoef(A35)),
    ("trapezoid", lambda T: vkt.trapezoid(T(A35, "float64"), T(W5, "float64")), lambda: np.trapezoid(A35, W5)),
    ("vander", lambda T: vkt.vander(T(A7, "float64"), 4), lambda: np.vander(A7, 4)),
    ("logcumsumexp", lambda T: vkt.logcumsumexp(T(A234 * 50, "float64"), 2),
     lambda: np.logaddexp.accumulate(A234 * 50, axis=2)),
]


@pytest.mark.parametrize("name,call,ref", NUMPY, ids=[n[0] for n in NUMPY])
def test_matches_numpy(device, name, call, ref):
    assert_close(call(maker(vkt, device)), ref(), rtol=1e-10, atol=1e-12)


# (name, call(lib, T)): each raises, and vkt must raise what torch raises
ERRORS = [
    ("histogram_no_bins", lambda lib, T: lib.histogram(T(A7), 0, range=(2.0, 1.0))),
    ("histogram_negative_bins", lambda lib, T: lib.histogram(T(A7, "int64"), -5)),
    ("histogram_range_order", lambda lib, T: lib.histogram(T(A7, "int64"), 3, range=(2.0, 1.0))),
    ("histogram_range_size", lambda lib, T: lib.histogram(T(A7), 3, range=(1.0, 2.0, 3.0))),
    ("histogram_range_nan", lambda lib, T: lib.histogram(T(A7), 3, range=(math.nan, 2.0))),
    ("histogram_range_inf", lambda lib, T: lib.histogram(T(A7), 3, range=(-math.inf, 1e10))),
    ("histogram_range_digits", lambda lib, T: lib.histogram(T(A7), 3, range=(0.1234567, 0.0001234567))),
    ("histogram_data_nan", lambda lib, T: lib.histogram(T([1.0, math.nan]), 3)),
    ("histogram_data_inf", lambda lib, T: lib.histogram(T([1.0, math.inf]), 3)),
    ("histogram_long", lambda lib, T: lib.histogram(T(INTS7, "int64"), 3)),
    ("histogram_long_range", lambda lib, T: lib.histogram(T(INTS7, "int64"), 3, range=(0.0, 3.0))),
    ("histogram_long_weight", lambda lib, T: lib.histogram(T(INTS7, "int64"), 3, weight=T(A7))),
    ("histogram_half", lambda lib, T: lib.histogram(T(A7, "float16"), 3)),
    ("histogram_bool", lambda lib, T: lib.histogram(T(A7 > 0, "bool"), 3)),
    ("histogram_weight_dtype", lambda lib, T: lib.histogram(T(A7), 3, weight=T(A7, "float64"))),
    ("histogram_weight_size", lambda lib, T: lib.histogram(T(A7), 3, weight=T(W5))),
    ("histogram_weight_0d", lambda lib, T: lib.histogram(T(A7), 3, weight=T(2.0))),
    ("histogram_edges_dtype", lambda lib, T: lib.histogram(T(A7), T([0.0, 1.0], "float64"))),
    ("histogram_edges_long", lambda lib, T: lib.histogram(T(A7), T([0, 1], "int64"))),
    ("histogram_long_edges", lambda lib, T: lib.histogram(T(INTS7, "int64"), T([0, 1, 2], "int64"))),
    ("histogram_edges_2d", lambda lib, T: lib.histogram(T(A7), T([[0.0, 1.0]]), weight=T(A7, "float64"))),
    ("histogram_edges_0d", lambda lib, T: lib.histogram(T(A7), T(2.0))),
    ("histogram_edges_empty", lambda lib, T: lib.histogram(T(A7), T([]))),
    ("histogram_edges_one", lambda lib, T: lib.histogram(T(A7), T([1.0]))),
    ("histogramdd_1d", lambda lib, T: lib.histogramdd(T(A7), 2)),
    ("histogramdd_1d_edges", lambda lib, T: lib.histogramdd(T(A7), [T([0.0, 1.0])])),
    ("histogramdd_bins_count", lambda lib, T: lib.histogramdd(T(P52), [2, 3, 4], weight=T(A7[:4]))),
    ("histogramdd_bins_empty", lambda lib, T: lib.histogramdd(T(P52), [])),
    ("histogramdd_edges_count", lambda lib, T: lib.histogramdd(T(P52), [T([0.0, 1.0])], weight=T(A7, "float64"))),
    ("histogramdd_long", lambda lib, T: lib.histogramdd(T(P52, "int64"), [2, 0])),
    ("histogramdd_long_range", lambda lib, T: lib.histogramdd(T(P52, "int64"), 2, range=[0, 1, 0, 1])),
    ("histogramdd_half", lambda lib, T: lib.histogramdd(T(P52, "float16"), 2)),
    ("histogramdd_range_size", lambda lib, T: lib.histogramdd(T(P52), [2, 0], range=[0.0, 1.0])),
    ("histogramdd_range_order", lambda lib, T: lib.histogramdd(T(P52), 2, weight=T(A7[:4]), range=[0, 1, 2, 1])),
    ("histogramdd_range_nan", lambda lib, T: lib.histogramdd(T(P52), 2, range=[0.0, math.nan, 0.0, 1.0])),
    ("histogramdd_no_bins", lambda lib, T: lib.histogramdd(T(P52), [2, 0])),
    ("histogramdd_negative_bins", lambda lib, T: lib.histogramdd(T(P52), [2, -1])),
    ("histogramdd_steps", lambda lib, T: lib.histogramdd(T(P52), [2, -3])),
    ("histogramdd_edges_dtype", lambda lib, T: lib.histogramdd(T(P52), [T([0.0, 1.0]), T([0, 1], "int64")])),
    ("histogramdd_edges_one", lambda lib, T: lib.histogramdd(T(P52), [T([0.0, 1.0]), T([1.0])])),
    ("histogramdd_edges_2d", lambda lib, T: lib.histogramdd(T(P52), [T([0.0, 1.0]), T([[1.0, 2.0]])])),
    ("histogramdd_weight_shape", lambda lib, T: lib.histogramdd(T(P423), 2, weight=T(P423[:, 0, 0]))),
    ("histogramdd_weight_0d", lambda lib, T: lib.histogramdd(T(P52), 2, weight=T(2.0))),
    ("histogramdd_weight_dtype", lambda lib, T: lib.histogramdd(T(P52), 2, weight=T(A7[:5], "float64"))),
    ("histogramdd_mixed_bins", lambda lib, T: lib.histogramdd(T(P52), [T([0.0, 1.0]), 2])),
    ("histogramdd_int_then_float", lambda lib, T: lib.histogramdd(T(P52), [2, 2.0])),
    ("histogramdd_int_then_tensor", lambda lib, T: lib.histogramdd(T(P52), (2, T([0.0, 1.0])))),
    ("broadcast_shapes_mismatch", lambda lib, T: lib.broadcast_shapes((2, 3), (4, 3))),
    ("broadcast_shapes_short", lambda lib, T: lib.broadcast_shapes((2, 3), (2,))),
    ("broadcast_shapes_negative", lambda lib, T: lib.broadcast_shapes((2, -1))),
    ("broadcast_shapes_type", lambda lib, T: lib.broadcast_shapes((2,), 2.5)),
    ("broadcast_shapes_str", lambda lib, T: lib.broadcast_shapes((2,), "a")),
    ("diff_0d", lambda lib, T: lib.diff(T(1.0))),
    ("diff_order", lambda lib, T: lib.diff(T(A7), n=-1)),
    ("diff_dim", lambda lib, T: lib.diff(T(A35), dim=2)),
    ("diff_prepend_ndim", lambda lib, T: lib.diff(T(A35), prepend=T(A7[:5]))),
    ("diff_prepend_shape", lambda lib, T: lib.diff(T(A35), append=T(np.ones((2, 2))))),
    ("diff_prepend_dim", lambda lib, T: lib.diff(T(A7), dim=1, prepend=T([1.0]))),
    ("bincount_float", lambda lib, T: lib.bincount(T(A7))),
    ("bincount_bool", lambda lib, T: lib.bincount(T([True], "bool"))),
    ("bincount_2d", lambda lib, T: lib.bincount(T([[1, 2]], "int64"))),
    ("bincount_negative", lambda lib, T: lib.bincount(T([1, -2], "int64"))),
    ("bincount_minlength", lambda lib, T: lib.bincount(T([1, 2], "int64"), minlength=-1)),
    ("bincount_minlength_type", lambda lib, T: lib.bincount(T([1, 2], "int64"), minlength=2.5)),
    ("bincount_weights", lambda lib, T: lib.bincount(T([1, 2], "int64"), T(np.ones(3)))),
    ("histc_int", lambda lib, T: lib.histc(T([1, 2], "int64"))),
    ("histc_bins", lambda lib, T: lib.histc(T(A7), bins=0)),
    ("histc_min_max", lambda lib, T: lib.histc(T(A7), min=3, max=1)),
    ("histc_inf", lambda lib, T: lib.histc(T([1.0, math.inf]))),
    ("histc_nan_data", lambda lib, T: lib.histc(T([1.0, math.nan]))),
    ("histc_nan_min", lambda lib, T: lib.histc(T(A7), min=math.nan, max=1)),
    ("isin_bool", lambda lib, T: lib.isin(T([1], "int64"), T([True], "bool"))),
    ("isin_bool_elements", lambda lib, T: lib.isin(T([True], "bool"), T([1], "int64"))),
    ("isin_two_numbers", lambda lib, T: lib.isin(1, 2)),
    ("isin_list", lambda lib, T: lib.isin([1], T([1], "int64"))),
    ("isin_invert_int", lambda lib, T: lib.isin(T(A7), T(A7), invert=1)),
    ("cartesian_prod_none", lambda lib, T: lib.cartesian_prod()),
    ("cartesian_prod_2d", lambda lib, T: lib.cartesian_prod(T(A35), T(A7))),
    ("cartesian_prod_0d", lambda lib, T: lib.cartesian_prod(T(1.0), T(A7))),
    ("cartesian_prod_dtypes", lambda lib, T: lib.cartesian_prod(T([1, 2], "int64"), T(A7))),
    ("combinations_2d", lambda lib, T: lib.combinations(T(A35))),
    ("combinations_negative", lambda lib, T: lib.combinations(T(A7), r=-1)),
    ("combinations_r_type", lambda lib, T: lib.combinations(T(A7), r=1.5)),
    ("cov_3d", lambda lib, T: lib.cov(T(A234))),
    ("cov_bool", lambda lib, T: lib.cov(T([[True]], "bool"))),
    ("cov_fweights_float", lambda lib, T: lib.cov(T(A35), fweights=T(W5))),
    ("cov_fweights_2d", lambda lib, T: lib.cov(T(A35), fweights=T(np.ones((1, 5)), "int64"))),
    ("cov_fweights_numel", lambda lib, T: lib.cov(T(A35), fweights=T(np.ones(4), "int64"))),
    ("cov_fweights_negative", lambda lib, T: lib.cov(T(A35), fweights=T(-np.ones(5), "int64"))),
    ("cov_aweights_int", lambda lib, T: lib.cov(T(A35), aweights=T(np.ones(5), "int64"))),
    ("cov_aweights_negative", lambda lib, T: lib.cov(T(A35), aweights=T(-W5))),
    ("cov_aweights_2d", lambda lib, T: lib.cov(T(A35), aweights=T(np.ones((5, 2))))),
    ("cov_aweights_numel", lambda lib, T: lib.cov(T(A35), aweights=T(np.ones(4)))),
    ("cov_weights_zero", lambda lib, T: lib.cov(T(A35), fweights=T(np.zeros(5), "int64"))),
    ("cov_correction_type", lambda lib, T: lib.cov(T(A35), correction=1.5)),
    ("corrcoef_3d", lambda lib, T: lib.corrcoef(T(A234))),
    ("logcumsumexp_int", lambda lib, T: lib.logcumsumexp(T([1, 2], "int64"), 0)),
    ("logcumsumexp_bool", lambda lib, T: lib.logcumsumexp(T([True], "bool"), 0)),
    ("logcumsumexp_dim", lambda lib, T: lib.logcumsumexp(T(A35), 2)),
    ("logcumsumexp_dim_0d", lambda lib, T: lib.logcumsumexp(T(1.0), 1)),
    ("trapezoid_0d", lambda lib, T: lib.trapezoid(T(1.0))),
    ("trapezoid_0d_x", lambda lib, T: lib.trapezoid(T(1.0), T([1.0]))),
    ("trapezoid_x_count", lambda lib, T: lib.trapezoid(T(A35), T(np.ones(4)))),
    ("trapezoid_dim", lambda lib, T: lib.trapezoid(T(A35), dim=3)),
    ("trapezoid_bool", lambda lib, T: lib.trapezoid(T([True], "bool"))),
    ("trapezoid_bool_x", lambda lib, T: lib.trapezoid(T([1.0]), T([True], "bool"))),
    ("trapezoid_dx_bool", lambda lib, T: lib.trapezoid(T(A7), dx=True)),
    ("trapz_bool", lambda lib, T: lib.trapz(T([True], "bool"))),
    ("cumulative_trapezoid_0d", lambda lib, T: lib.cumulative_trapezoid(T(1.0))),
    ("cumulative_trapezoid_0d_x", lambda lib, T: lib.cumulative_trapezoid(T(1.0), T(1.0))),
    ("cumulative_trapezoid_bool", lambda lib, T: lib.cumulative_trapezoid(T([True], "bool"))),
    ("cumulative_trapezoid_x_count", lambda lib, T: lib.cumulative_trapezoid(T(A35), T(np.ones(4)))),
    ("cumulative_trapezoid_dim", lambda lib, T: lib.cumulative_trapezoid(T(A35), dim=-3)),
    ("block_diag_3d", lambda lib, T: lib.block_diag(T(A7), T(A234))),
    ("vander_2d", lambda lib, T: lib.vander(T(A35))),
    ("vander_0d", lambda lib, T: lib.vander(T(2.0))),
    ("vander_negative", lambda lib, T: lib.vander(T(A7), N=-1)),
    ("vander_n_type", lambda lib, T: lib.vander(T(A7), N=2.5)),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(device, name, call):
    want = raised(lambda: call(torch, maker(torch, "cpu")))
    assert want[0] is not None
    assert raised(lambda: call(vkt, maker(vkt, device))) == want


# torch's argument parser says which arguments were passed by keyword; vkt can't tell, so only the type and the
# message's opening are compared
PARSER_ERRORS = [
    ("trapezoid_x_and_dx", lambda lib, T: lib.trapezoid(T(A35), T(W5), dx=1)),
    ("histogram_float_bins", lambda lib, T: lib.histogram(T(A7), 3.0)),
    ("histogram_bool_bins", lambda lib, T: lib.histogram(T(A7), True)),
    ("histogram_edges_and_range", lambda lib, T: lib.histogram(T(A7), T([0.0, 1.0]), range=(0.0, 1.0))),
    ("histogram_not_a_tensor", lambda lib, T: lib.histogram(A7, 3)),
    ("histogramdd_float_bins", lambda lib, T: lib.histogramdd(T(P52), 2.0)),
    ("histogramdd_no_bins_given", lambda lib, T: lib.histogramdd(T(P52))),
]



@pytest.mark.parametrize("name,call", PARSER_ERRORS, ids=[e[0] for e in PARSER_ERRORS])
def test_argument_errors_match_torch_type(device, name, call):
    want, got = raised(lambda: call(torch, maker(torch, "cpu"))), raised(lambda: call(vkt, maker(vkt, device)))
    assert got[0] == want[0] == "TypeError" and got[1].split(" - ")[0] == want[1].split(" - ")[0]


def test_tensor_methods_are_torchs():
    """The Tensor methods torch has (isin, cartesian_prod and the rest are functions only)."""
    names = ["diff", "bincount", "histc", "histogram", "histogramdd", "logcumsumexp", "cov", "corrcoef", "isin",
             "cartesian_prod", "combinations", "trapezoid", "trapz", "cumulative_trapezoid", "block_diag", "vander",
             "broadcast_shapes"]
    assert {n for n in names if hasattr(vkt.Tensor, n)} == {n for n in names if hasattr(torch.Tensor, n)}
