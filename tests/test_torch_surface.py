# torch's smaller functions, Tensor methods and utilities against torch CPU, from one table: each case runs the
# same lambda with torch and with vkt (on cpu and vulkan) and compares values, dtypes, shapes, the gradients of
# arguments marked grad, and errors (type and message, 'torch' read as 'vkt').
import math

import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")


class A:
    """An argument: data made a tensor of dtype in each library; grad marks it a leaf whose gradient is compared."""

    def __init__(self, data, dtype="float32", grad=False):
        self.data, self.dtype, self.grad = data, dtype, grad

    def make(self, m, device):
        t = m.tensor(np.array(self.data, dtype=self.dtype), device=device if m is vkt else "cpu")
        return t.requires_grad_(True) if self.grad else t


R = np.random.default_rng(0)
M = A(R.standard_normal((3, 4)).round(3).tolist(), grad=True)
V = A([3.0, -1.5, 0.0, 2.25, -0.0, 7.0], grad=True)
NANS = [1.0, float("nan"), -2.0, float("inf"), float("nan"), 0.5]
I1, I2 = A([12, -8, 0, 7, 9], "int64"), A([18, 12, 0, -21, 6], "int32")
Q = A([[1.0, 5.0, 2.0, 8.0, 3.0], [4.0, float("nan"), 0.0, 6.0, 2.0]], "float64", grad=True)

CASES = [
    ("ravel", lambda m, x: m.ravel(x.t()), [M]),
    ("ravel_method", lambda m, x: x.ravel(), [M]),
    ("tensor_split_n", lambda m, x: m.tensor_split(x, 3, dim=1), [M]),
    ("tensor_split_idx", lambda m, x: x.tensor_split([1, 3, 9]), [V]),
    ("tensor_split_tensor", lambda m, x: m.tensor_split(x, m.tensor([1, 4]), 1), [M]),
    ("hsplit", lambda m, x: m.hsplit(x, 2), [M]),
    ("hsplit_1d", lambda m, x: x.hsplit([2]), [V]),
    ("vsplit", lambda m, x: m.vsplit(x, [1]), [M]),
    ("dsplit", lambda m, x: m.dsplit(x.reshape(1, 3, 4), 2), [M]),
    ("reshape_as", lambda m, x, y: x.reshape_as(y), [M, A(np.zeros((2, 6)).tolist())]),
    ("sum_to_size", lambda m, x: x.sum_to_size(1, 4), [M]),
    ("sum_to_size_lead", lambda m, x: x.reshape(1, 3, 4).sum_to_size((3, 1)), [M]),
    ("positive", lambda m, x: m.positive(x) * 2, [V]),
    ("sgn", lambda m, x: m.sgn(x), [V]),
    ("sgn_int", lambda m, x: x.sgn(), [I1]),
    ("signbit", lambda m, x: m.signbit(x), [A([-0.0, 0.0, -1.0, 2.0, float("-inf")])]),
    ("signbit_f64", lambda m, x: x.signbit(), [A([-0.0, 1.0, -3.0], "float64")]),
    ("signbit_int", lambda m, x: m.signbit(x), [I1]),
    ("signbit_uint8", lambda m, x: m.signbit(x), [A([0, 3], "uint8")]),
    ("fmax", lambda m, x, y: m.fmax(x, y), [A(NANS, grad=True), A([0.0, 2.0, float("nan"), 1.0, float("nan"), 0.5],
                                                                 grad=True)]),
    ("fmin", lambda m, x, y: x.fmin(y), [A(NANS, grad=True), A([[0.0], [3.0]], grad=True)]),
    ("fmax_int_float", lambda m, x, y: m.fmax(x, y), [I1, A([1.5, 2.0, -1.0, 7.0, 10.0])]),
    ("heaviside", lambda m, x, y: m.heaviside(x, y), [A([-1.0, 0.0, 2.0, 0.0]), A([0.5])]),
    ("heaviside_int", lambda m, x, y: x.heaviside(y), [A([-1, 0, 2], "int64"), A([7], "int64")]),
    ("float_power", lambda m, x: m.float_power(x, 2), [V]),
    ("float_power_tensor", lambda m, x, y: x.float_power(y), [A([1.5, 2.0], grad=True), A([2, 3], "int32")]),
    ("float_power_int", lambda m, x: m.float_power(x, 0.5), [A([4, 9], "int64")]),
    ("float_power_", lambda m, x: (x.double() * 1).float_power_(2), [V]),
    ("float_power_tensor_", lambda m, x, y: (x * 1).float_power_(y), [A([1.5, 2.0], "float64", grad=True),
                                                                       A([2, 3], "int32")]),
    ("float_power_grad_exponent_", lambda m, x, y: (x * 1).float_power_(y), [A([1.5, 2.0], "float64", grad=True),
                                                                              A([2.0, 0.5], grad=True)]),
    ("sgn_", lambda m, x: (x * 1).sgn_(), [V]),
    ("sgn_int_", lambda m, x: x.sgn_(), [I1]),
    ("sgn_bool", lambda m, x: (m.sgn(x), x.sgn_()), [A([True, False], "bool")]),
    ("sgn_node", lambda m, x: (m.sgn(x).grad_fn.name(), (x * 1).sgn_().grad_fn.name()), [V]),
    ("true_divide_", lambda m, x, y: (x * 1).true_divide_(y), [V, A([2.0, 4.0, -1.0, 3.0, 0.5, -2.0], grad=True)]),
    ("true_divide_scalar_", lambda m, x: (x * 1).true_divide_(4), [V]),
    ("true_divide_half_", lambda m, x: x.half().true_divide_(3), [V]),
    ("heaviside_", lambda m, x, y: (x * 1).heaviside_(y), [A([-1.0, 0.0, 2.0, 0.0]), A([0.5])]),
    ("heaviside_int_", lambda m, x, y: x.heaviside_(y), [A([-1, 0, 2], "int64"), A([7, 8, 9], "int64")]),
    ("angle", lambda m, x: m.angle(x), [A([-1.5, 0.0, -0.0, math.nan, 2.0, -math.inf, math.inf], grad=True)]),
    ("angle_f64", lambda m, x: x.angle(), [A([-1.5, 0.0, 2.0, -1e-300], "float64", grad=True)]),
    ("angle_half", lambda m, x: x.angle(), [A([-1.5, 0.0, 2.0], "float16")]),
    ("angle_int", lambda m, x: x.angle(), [I1]),
    ("angle_uint8", lambda m, x: m.angle(x), [A([0, 3], "uint8")]),
    ("angle_bool", lambda m, x: m.angle(x), [A([True, False], "bool")]),
    ("conj", lambda m, x: (m.conj(x) is x, x.conj() is x, m.conj_physical(x) is x, x.conj_physical() is x,
                           m.resolve_conj(x) is x, x.resolve_conj() is x, m.resolve_neg(x) is x, x.resolve_neg() is x,
                           m.is_conj(x), x.is_conj(), m.is_neg(x), x.is_neg()), [V]),
    ("conj_grad", lambda m, x: m.conj(x) * 2 + x.conj_physical() + m.resolve_neg(x), [V]),
    ("conj_physical_", lambda m, x: (x * 2).conj_physical_() * 3, [V]),
    ("conj_physical_version", lambda m, x: (m.conj_physical_(x) is x, x._version), [I1]),
    ("nextafter", lambda m, x, y: m.nextafter(x, y), [A([0.0, -0.0, 1.0, float("inf"), float("nan"), 2.0], grad=True),
                                                      A([-0.0, 1.0, 0.0, 0.0, 1.0, 2.0], grad=True)]),
    ("nextafter_method", lambda m, x, y: x.nextafter(y), [A([1.0, 2.0], "float64", grad=True), A([3.0])]),
    ("nextafter_", lambda m, x, y: (x * 1).nextafter_(y), [V, A([0.0], "float64")]),
    ("ldexp", lambda m, x, y: m.ldexp(x, y), [V, A([1, 2, 3, 5, 0, 4], "int64")]),
    ("ldexp_negative", lambda m, x, y: m.ldexp(x, y), [A([3.0, 2.25]), A([-1, -3], "int64")]),
    ("ldexp_int", lambda m, x, y: x.ldexp(y), [A([1, 3], "int32"), A([3, 2], "int32")]),
    ("logaddexp2", lambda m, x, y: m.logaddexp2(x, y), [V, A([1.0, 2.0, 0.0, -3.0, 0.0, 7.0], grad=True)]),
    ("isreal", lambda m, x: m.isreal(x), [V]),
    ("gcd", lambda m, x, y: m.gcd(x, y), [I1, I2]),
    ("lcm", lambda m, x, y: x.lcm(y), [I1, I2]),
    ("gcd_uint8", lambda m, x, y: m.gcd(x, y), [A([12, 0, 255], "uint8"), A([18, 5, 15], "uint8")]),
    ("adjoint", lambda m, x: m.adjoint(x) * 2, [M]),
    ("mH", lambda m, x: x.mH, [M]),
    ("H", lambda m, x: x.H, [M]),
    ("mH_batch", lambda m, x: x.reshape(2, 2, 3).mH, [M]),
    ("real", lambda m, x: x.real + 1, [V]),
    ("diagflat", lambda m, x: m.diagflat(x, 1), [M]),
    ("diagflat_neg", lambda m, x: x.diagflat(-2), [V]),
    ("select_scatter", lambda m, x, y: m.select_scatter(x, y, 0, 1), [M, A([1.0, 2.0, 3.0, 4.0], grad=True)]),
    ("slice_scatter", lambda m, x, y: x.slice_scatter(y, 1, 1, 4, 2), [M, A(np.ones((3, 2)).tolist(), grad=True)]),
    ("diagonal_scatter", lambda m, x, y: m.diagonal_scatter(x, y, 1), [M, A([9.0, 8.0, 7.0], grad=True)]),
    ("tril_", lambda m, x: (x * 1).tril_(1), [M]),
    ("triu_", lambda m, x: (x * 1).triu_(-1), [M]),
    ("fill_diagonal_", lambda m, x: (x * 1).fill_diagonal_(5.0), [M]),
    ("fill_diagonal_wrap", lambda m: m.zeros(7, 3).fill_diagonal_(1, wrap=True), []),
    ("fill_diagonal_3d", lambda m: m.zeros(2, 2, 2, dtype=m.int64).fill_diagonal_(3), []),
    ("fill_diagonal_wide_wrap", lambda m: m.zeros(3, 5).fill_diagonal_(1, wrap=True), []),
    ("fill_diagonal_transposed", lambda m: m.zeros(5, 3).T.fill_diagonal_(2.0, wrap=True), []),
    ("fill_diagonal_4d", lambda m: m.ones(2, 2, 2, 2).fill_diagonal_(-1.0), []),
    ("fill_diagonal_empty", lambda m: m.zeros(4, 0).fill_diagonal_(1.0), []),
    ("rsub", lambda m, x, y: m.rsub(x, y, alpha=2), [V, A([1.0], grad=True)]),
    ("rsub_scalar", lambda m, x: m.rsub(x, 3), [I1]),
    ("unravel_index", lambda m, x: m.unravel_index(x, (2, 3, 4)), [A([0, 5, 23, 17], "int64")]),
    ("scalar_tensor", lambda m: m.scalar_tensor(3), []),
    ("scalar_tensor_dtype", lambda m: m.scalar_tensor(2.5, dtype=m.float64), []),
    ("empty_strided", lambda m: m.empty_strided((2, 3), (1, 2)).fill_(1.5).stride(), []),
    ("clone", lambda m, x: m.clone(x) * 3, [M]),
    ("numel", lambda m, x: m.numel(x), [M]),
    ("is_tensor", lambda m, x: (m.is_tensor(x), m.is_tensor([1])), [M]),
    ("is_floating_point", lambda m, x, y: (m.is_floating_point(x), m.is_floating_point(y)), [M, I1]),
    ("is_complex", lambda m, x: (m.is_complex(x), x.is_complex()), [M]),
    ("is_signed", lambda m, x, y, z: (x.is_signed(), y.is_signed(), z.is_signed()), [M, A([1], "uint8"),
                                                                                      A([True], "bool")]),
    ("itemsize_nbytes", lambda m, x, y: (x.itemsize, x.nbytes, y.itemsize, y.nbytes), [M, A([1, 2], "float16")]),
    ("flags", lambda m, x: (x.is_sparse, x.is_quantized, x.is_meta), [M]),
    ("type_cast", lambda m, x: x.type(m.float64), [M]),
    ("type_name_cast", lambda m, x: x.type("torch.IntTensor"), [I1]),
]

for _mode in ("linear", "lower", "higher", "midpoint", "nearest"):
    CASES += [
        (f"quantile_{_mode}", lambda m, x, i=_mode: m.quantile(x[0], 0.3, interpolation=i), [Q]),
        (f"quantile_dim_{_mode}", lambda m, x, i=_mode: x.quantile(m.tensor([0.0, 0.25, 0.9, 1.0], dtype=m.float64),
                                                                   dim=1, keepdim=True, interpolation=i), [Q]),
        (f"nanquantile_{_mode}", lambda m, x, i=_mode: m.nanquantile(x, 0.6, dim=-1, interpolation=i), [Q]),
    ]
CASES += [
    ("quantile_all_keepdim", lambda m, x: m.quantile(x, 0.5, keepdim=True), [M]),
    ("nanquantile_flat", lambda m, x: m.nanquantile(x, m.tensor([0.1, 0.7], dtype=m.float64)), [Q]),
    ("nanquantile_all_nan", lambda m, x: m.nanquantile(x, 0.5), [A([float("nan")] * 3)]),
]

ERRORS = [
    ("vsplit_1d", lambda m, x: m.vsplit(x, 2), [V]),
    ("dsplit_2d", lambda m, x: m.dsplit(x, 2), [M]),
    ("hsplit_indivisible", lambda m, x: m.hsplit(x, 4), [V]),
    ("tensor_split_zero", lambda m, x: m.tensor_split(x, 0), [V]),
    ("sum_to_size", lambda m, x: x.sum_to_size(2, 2), [M]),
    ("positive_bool", lambda m, x: m.positive(x), [A([True], "bool")]),
    ("heaviside_dtypes", lambda m, x, y: m.heaviside(x, y), [V, A([1], "int64")]),
    ("logaddexp2_int", lambda m, x, y: m.logaddexp2(x, y), [I1, I1]),
    ("gcd_float", lambda m, x, y: m.gcd(x, y), [V, V]),
    ("float_power_float32_", lambda m, x: x.float_power_(2), [A([1.0, 2.0])]),
    ("float_power_int_", lambda m, x: x.float_power_(x), [I1]),
    ("float_power_leaf_", lambda m, x: x.float_power_(2), [A([1.0, 2.0], "float64", grad=True)]),
    ("float_power_broadcast_", lambda m, x: x.detach().double().float_power_(m.ones(2, 6, device=x.device)), [V]),
    ("sgn_leaf_", lambda m, x: x.sgn_(), [V]),
    ("true_divide_int_", lambda m, x: x.true_divide_(2), [I1]),
    ("true_divide_broadcast_", lambda m, x: x.detach().true_divide_(m.ones(2, 6, device=x.device)), [V]),
    ("heaviside_dtypes_", lambda m, x, y: x.heaviside_(y), [A([1.0, 0.0]), A([1.0, 0.0], "float64")]),
    ("heaviside_broadcast_", lambda m, x, y: x.heaviside_(y), [A([1.0, 0.0]), A([[1.0], [2.0]])]),
    ("heaviside_leaf_", lambda m, x: x.heaviside_(x.detach()), [V]),
    ("conj_physical_leaf_", lambda m, x: x.conj_physical_(), [V]),
    ("nextafter_leaf_", lambda m, x: x.nextafter_(x.detach()), [V]),
    ("quantile_int", lambda m, x: m.quantile(x, 0.5), [I1]),
    ("quantile_q_range", lambda m, x: m.quantile(x, 1.5), [V]),
    ("quantile_q_dtype", lambda m, x: m.quantile(x, m.tensor([0.5], dtype=m.float64)), [V]),
    ("quantile_interp", lambda m, x: m.quantile(x, 0.5, interpolation="foo"), [V]),
    ("quantile_empty", lambda m: m.quantile(m.ones(0), 0.5), []),
    ("adjoint_1d", lambda m, x: m.adjoint(x), [V]),
    ("mH_1d", lambda m, x: x.mH, [V]),
    ("H_1d", lambda m, x: x.H, [V]),
    ("imag", lambda m, x: x.imag, [V]),
    ("select_scatter_size", lambda m, x, y: m.select_scatter(x, y, 0, 0), [M, V]),
    ("unravel_index_float", lambda m, x: m.unravel_index(x, (2, 3)), [V]),
    ("is_floating_point_int", lambda m: m.is_floating_point(3), []),
    ("fill_diagonal_3d_unequal", lambda m: m.zeros(2, 3, 2).fill_diagonal_(1), []),
    ("asarray_alias_list", lambda m: m.asarray([1, 2], copy=False), []),
    ("asarray_alias_dtype", lambda m, x: m.asarray(x, dtype=m.float64, copy=False), [V]),
    ("finfo_int", lambda m: m.finfo(m.int32), []),
    ("iinfo_float", lambda m: m.iinfo(m.float32), []),
]


def _run(m, device, fn, args):
    tensors = [a.make(m, device) for a in args]
    return fn(m, *tensors), tensors


def _same(got, want):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, vkt.Tensor), f"{type(got).__name__} is not a tensor"
        want = want.detach().numpy(force=True)
        got = np.asarray(got.detach().cpu())
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, torch.dtype):
        assert str(got)[4:] == str(want)[6:]
    else:
        assert got == want


def _as_float_sum(out):
    parts = out if isinstance(out, (tuple, list)) else [out]
    return sum((p.sum() for p in parts if isinstance(p, (torch.Tensor, vkt.Tensor)) and p.requires_grad), start=0.0)


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(device, name, fn, args):
    want, t_in = _run(torch, device, fn, args)
    got, v_in = _run(vkt, device, fn, args)
    _same(got, want)
    if any(a.grad for a in args) and isinstance(_as_float_sum(want), torch.Tensor):
        _as_float_sum(want).backward()
        _as_float_sum(got).backward()
        for a, t, v in zip(args, t_in, v_in):
            if a.grad:
                _same(v.grad, t.grad)


@pytest.mark.parametrize("name,fn,args", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(device, name, fn, args):
    with pytest.raises(Exception) as want:
        _run(torch, device, fn, args)
    with pytest.raises(want.type) as got:
        _run(vkt, device, fn, args)
    assert str(got.value) == str(want.value).replace("torch", "vkt")


def test_dtype_utilities():
    names = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
    for a in names:
        for b in names:
            va, vb, ta, tb = getattr(vkt, a), getattr(vkt, b), getattr(torch, a), getattr(torch, b)
            _same(vkt.promote_types(va, vb), torch.promote_types(ta, tb))
            assert vkt.can_cast(va, vb) == torch.can_cast(ta, tb), (a, b)
    for a in names[1:4]:
        vi, ti = vkt.iinfo(getattr(vkt, a)), torch.iinfo(getattr(torch, a))
        assert (vi.bits, vi.min, vi.max, vi.dtype) == (ti.bits, ti.min, ti.max, ti.dtype)
    for a in names[4:]:
        vf, tf = vkt.finfo(getattr(vkt, a)), torch.finfo(getattr(torch, a))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(vf, field) == getattr(tf, field), (a, field)
    assert vkt.finfo().dtype == torch.finfo().dtype
    _same(vkt.get_default_dtype(), torch.get_default_dtype())
    for x, y in [(vkt.ones(2, dtype=vkt.int32), 2.0), (vkt.ones(2, dtype=vkt.uint8), vkt.tensor(5)),
                 (vkt.tensor(1.0, dtype=vkt.float64), vkt.ones(2, dtype=vkt.float16))]:
        tx = torch.tensor(np.asarray(x))
        ty = torch.tensor(np.asarray(y)) if isinstance(y, vkt.Tensor) else y
        _same(vkt.result_type(x, y), torch.result_type(tx, ty))


def test_layout_and_type_names(device):
    x = vkt.ones(2, device=device)
    assert repr(x.layout) == "vkt.strided" and x.layout is vkt.strided
    assert x.type() == ("vkt.FloatTensor" if device == "cpu" else "vkt.vulkan.FloatTensor")
    assert vkt.ones(1, dtype=vkt.bool).type() == "vkt.BoolTensor"
    assert x.type("vkt.vulkan.DoubleTensor").device.type == "vulkan"
    with pytest.raises(TypeError, match="int8"):
        x.type("torch.CharTensor")


def test_as_tensor_and_asarray(device):
    a = np.arange(4, dtype=np.float32)
    shared = vkt.as_tensor(a)
    a[0] = 9
    assert shared[0].item() == 9 and vkt.asarray(a)[0].item() == 9
    copied = vkt.asarray(a, copy=True)
    a[0] = 1
    assert copied[0].item() == 9
    x = vkt.ones(3, device=device)
    assert vkt.as_tensor(x) is x and vkt.asarray(x) is x and vkt.asarray(x, copy=False) is x
    assert vkt.as_tensor(x, dtype=vkt.float64).dtype == vkt.float64
    y = vkt.asarray(x, copy=True)
    assert y is not x and y.device == x.device
    assert vkt.as_tensor([1, 2], device=device).device.type == device
    assert vkt.asarray(3.5).dtype == vkt.float32 and vkt.asarray([1, 2], dtype=vkt.float64).dtype == vkt.float64
    assert vkt.asarray([1.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="alias"):
        vkt.asarray(np.ones(2), dtype=vkt.float32, copy=False)


FROMBUFFER = [  # (buffer bytes, keyword arguments): vkt.frombuffer against torch's, values or ValueErrors
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32"}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32", "count": 2, "offset": 4}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32", "count": -2}),
    (b"\x01\x02\x03\x04\x05\x06\x07\x08", {"dtype": "int32", "offset": 4}),
    (b"abcd", {"dtype": "uint8", "offset": 1, "count": 3}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32", "count": 5}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32", "offset": 16}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32", "offset": -1}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float32", "offset": 2}),
    (b"\x00\x00\x80\x3f" * 4, {"dtype": "float64", "count": 0}),
    (b"", {"dtype": "float32"}),
    (b"abc", {"dtype": "float32"}),
]


@pytest.mark.parametrize("data,kwargs", FROMBUFFER)
def test_frombuffer_as_torch(data, kwargs):
    def outcome(m):
        try:
            t = m.frombuffer(bytearray(data), **{**kwargs, "dtype": getattr(m, kwargs["dtype"])})
        except ValueError as e:
            return str(e)
        return str(t.dtype).split(".")[-1], t.tolist()

    assert outcome(vkt) == outcome(torch)


def test_frombuffer_shares_memory_and_names():
    buffer = bytearray(8)
    t = vkt.frombuffer(buffer, dtype=vkt.int32, requires_grad=False)
    buffer[4] = 7
    assert t.tolist() == [0, 7] and t.device.type == "cpu"
    with pytest.raises(ValueError, match="buffer protocol"):
        vkt.frombuffer([1, 2], dtype=vkt.uint8)
    for obj, name in ((vkt.zeros(2), "vkt.FloatTensor"), (vkt.zeros(1, dtype=vkt.int64), "vkt.LongTensor"), (3, "int"),
                      (len, "len"), (vkt.nn.Linear(2, 2), "vkt.nn.modules.linear.Linear"),
                      (vkt.nn.Linear, "vkt.nn.modules.linear.Linear")):
        assert vkt.typename(obj) == name
    assert torch.typename(3) == "int" and not vkt.is_storage(t) and not vkt.is_storage(buffer)


def test_seeds_and_determinism():
    vkt.manual_seed(123)
    assert vkt.initial_seed() == 123
    first = vkt.rand(3).tolist()
    s = vkt.seed()
    assert vkt.initial_seed() == s
    vkt.manual_seed(123)
    assert vkt.rand(3).tolist() == first
    assert not vkt.are_deterministic_algorithms_enabled()
    vkt.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert vkt.are_deterministic_algorithms_enabled() and vkt.is_deterministic_algorithms_warn_only_enabled()
    finally:
        vkt.use_deterministic_algorithms(False)
    with pytest.raises(TypeError):
        vkt.use_deterministic_algorithms(1)


def test_set_printoptions():
    x, tx = vkt.tensor([1.23456, 2.5, 1e-3]), torch.tensor([1.23456, 2.5, 1e-3])
    big, tbig = vkt.arange(20.0), torch.arange(20.0)
    try:
        for opts in [dict(precision=2), dict(sci_mode=True), dict(profile="short"), dict(threshold=5, edgeitems=2),
                     dict(linewidth=30)]:
            vkt.set_printoptions(**opts)
            torch.set_printoptions(**opts)
            assert repr(x) == repr(tx)
            assert repr(big) == repr(tbig)
            vkt.set_printoptions(profile="default")
            torch.set_printoptions(profile="default")
    finally:
        vkt.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
