# vkt.compile / vkt.compiler, vkt.testing (assert_close, make_tensor) and vkt.nn.attention (SDPBackend, sdpa_kernel)
# against torch's: compile returns what it is given and refuses what torch refuses; assert_close passes and fails
# where torch's does, with the same exception type and message (torch's names and shapes printed as vkt prints
# them), on both devices; make_tensor's ranges, layouts and errors; sdpa_kernel's checks, and attention's values
# unchanged inside it.
import re
import warnings

import numpy as np
import pytest

import vkt
from conftest import assert_close

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def keep_torch_distribution_validation():
    """torch.compile's first call (dynamo's import) turns torch.distributions' argument validation off for the whole
    process; the distribution tests that run later compare vkt's validation errors with torch's."""
    before = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


def as_vkt(message):
    """A torch message as vkt prints it: vkt's names for torch's (torch.Size([2, 3]) as vkt.Size([2, 3])), but for
    torch._dynamo's, which vkt's messages name too: vkt.compile takes torch's backend names."""
    return re.sub(r"torch\.(?!_dynamo)", "vkt.", message)


def raised(call):
    """(exception type, message) of what call raises, or (None, None)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e), str(e)
    return None, None


def same_error(vkt_call, torch_call):
    """vkt raises what torch raises (or a base of it: torch's InvalidBackend is a RuntimeError), with torch's
    message, or neither raises."""
    got, want = raised(vkt_call), raised(torch_call)
    assert (got[0] is want[0] is None) or (got[0] is not None and want[0] is not None and issubclass(want[0], got[0]))
    assert got[1] == (want[1] if want[1] is None else as_vkt(want[1])), (got, want)
    return got


# ---- vkt.compile, vkt.compiler

COMPILE_ERRORS = [  # kwargs torch.compile refuses, for a function
    dict(mode="bogus"),
    dict(mode=3),
    dict(mode="default", options={}),
    dict(backend="nonexistent"),
]

COMPILE_OK = [  # kwargs it takes
    dict(),
    dict(mode="max-autotune"),
    dict(mode="reduce-overhead", fullgraph=True, dynamic=False),
    dict(options={"triton.cudagraphs": True}),
    dict(backend="eager", mode="bogus"),  # mode is checked for inductor only
    dict(backend=lambda gm, inputs: gm),
    dict(disable=True),
]


def double(x):
    return x * 2


@pytest.mark.parametrize("kw", COMPILE_ERRORS, ids=str)
def test_compile_errors(kw):
    same_error(lambda: vkt.compile(double, **kw), lambda: torch.compile(double, **kw))
    decorator = vkt.compile(**kw)  # as torch, the arguments are checked when the decorator is applied
    same_error(lambda: decorator(double), lambda: torch.compile(**kw)(double))


@pytest.mark.parametrize("kw", COMPILE_OK, ids=str)
def test_compile_is_identity(kw, device):
    assert vkt.compile(double, **kw) is double
    assert vkt.compile(**kw)(double) is double
    model = vkt.nn.Linear(3, 2, device=device)
    assert vkt.compile(model, **kw) is model
    x = vkt.randn(4, 3, device=device)
    assert_close(vkt.compile(model, **kw)(x), model(x).cpu().numpy(), rtol=0, atol=0)


@pytest.mark.parametrize("kw", COMPILE_ERRORS, ids=str)
def test_module_compile(kw):
    """Module.compile checks compile's arguments and returns None; the module computes as before."""
    model, reference = vkt.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    same_error(lambda: model.compile(**kw), lambda: reference.compile(**kw))
    assert model.compile() is None and reference.compile() is None


def test_compile_as_decorator(device):
    @vkt.compile
    def f(x):
        return x.sin() + x.cos()

    @vkt.compile(mode="max-autotune", fullgraph=True)
    def g(x):
        return x.relu()

    x = vkt.tensor(np.linspace(-2, 2, 7, dtype=np.float32), device=device)
    assert_close(f(x), np.sin(x.cpu().numpy()) + np.cos(x.cpu().numpy()), rtol=1e-5, atol=1e-6)
    assert_close(g(x), np.maximum(x.cpu().numpy(), 0), rtol=0, atol=0)
    same_error(lambda: vkt.compile()(None), lambda: torch.compile()(None))


def test_compiler_namespace():
    assert vkt.compiler.is_compiling() is torch.compiler.is_compiling() is False
    assert vkt.compiler.is_dynamo_compiling() is False and vkt.compiler.is_exporting() is False
    assert vkt.compiler.disable(double) is double
    assert vkt.compiler.disable(recursive=False)(double) is double
    assert vkt.compiler.compile is vkt.compile
    assert vkt.compiler.reset() is None


# ---- vkt.testing.assert_close

def t(values, dtype="float32"):
    """A builder of the same tensor in either library: t(values)(lib, device)."""
    def build(lib, device):
        kw = {} if lib is torch else {"device": device}
        return lib.tensor(values, dtype=getattr(lib, dtype), **kw)
    return build


def const(value):
    return lambda lib, device: value


NAN, INF = float("nan"), float("inf")

CLOSE_CASES = [  # (id, actual, expected, kwargs); values chosen so that every difference and ratio is exact
    ("equal", t([1.0, 2.0, 3.0]), t([1.0, 2.0, 3.0]), {}),
    ("within-default-float32", t([1.0, 2.0]), t([1.0, 2.0 + 2e-6]), {}),
    ("one-off", t([1.0, 2.5, 3.0]), t([1.0, 2.0, 3.0]), {}),
    ("2d-two-off", t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.5, 0.0]]), {}),
    ("float64", t([1.0, 2.0], "float64"), t([1.0, 2.0 + 1e-6], "float64"), {}),
    ("float16", t([1.0, 2.0], "float16"), t([1.0, 2.001], "float16"), {}),
    ("float16-off", t([1.0, 2.0], "float16"), t([1.0, 2.5], "float16"), {}),
    ("int64", t([1, 2, 3], "int64"), t([1, 6, 3], "int64"), {}),
    ("int32", t([[1, 2], [3, 4]], "int32"), t([[1, 2], [3, 2]], "int32"), {}),
    ("uint8", t([1, 2], "uint8"), t([1, 4], "uint8"), {}),
    ("bool", t([True, False]), t([True, True]), {}),
    ("0-d", t(1.5), t(1.0), {}),
    ("0-d-int", t(3, "int64"), t(4, "int64"), {}),
    ("nan", t([1.0, NAN]), t([1.0, NAN]), {}),
    ("nan-equal", t([1.0, NAN]), t([1.0, NAN]), dict(equal_nan=True)),
    ("inf", t([INF, -INF]), t([INF, -INF]), {}),
    ("inf-sign", t([INF, 1.0]), t([-INF, 1.0]), {}),
    ("zero-expected", t([0.0, 2.0]), t([1.0, 0.0]), {}),
    ("tolerances", t([1.0, 2.0]), t([1.0, 2.25]), dict(rtol=0.0, atol=0.25)),
    ("tolerances-off", t([1.0, 2.0]), t([1.0, 2.5]), dict(rtol=0.125, atol=0.0)),
    ("exact", t([1.0, 2.0]), t([1.0, 2.5]), dict(rtol=0.0, atol=0.0)),
    ("only-rtol", t([1.0]), t([1.0]), dict(rtol=1e-3)),
    ("only-atol", t([1.0]), t([1.0]), dict(atol=1e-3)),
    ("shape", t([1.0]), t([1.0, 2.0]), {}),
    ("shape-2d", t([[1.0, 2.0]]), t([1.0, 2.0]), {}),
    ("dtype", t([1.0]), t([1.0], "float64"), {}),
    ("dtype-unchecked", t([1.0, 2.0]), t([1.0, 2.5], "float64"), dict(check_dtype=False)),
    ("int-float-unchecked", t([1, 2], "int64"), t([1.0, 2.0]), dict(check_dtype=False)),
    ("stride", lambda lib, d: t([[1.0, 2.0], [3.0, 4.0]])(lib, d).t().contiguous(),
     lambda lib, d: t([[1.0, 3.0], [2.0, 4.0]])(lib, d).t().t(), dict(check_stride=True)),
    ("tensor-vs-number", t([1.0]), const(1.0), {}),
    ("numbers", const(1.0), const(1.5), {}),
    ("numbers-close", const(1.0), const(1.0 + 1e-8), {}),
    ("int-vs-float", const(1), const(1.0), {}),
    ("int-vs-float-unchecked", const(1), const(1.0), dict(check_dtype=False)),
    ("number-nan", const(NAN), const(NAN), {}),
    ("number-nan-equal", const(NAN), const(NAN), dict(equal_nan=True)),
    ("numpy-numbers", const(np.float32(0.5)), const(np.float64(0.75)), {}),
    ("numpy-arrays", const(np.array([1.0, 2.0])), const(np.array([1.0, 2.5])), {}),
    ("booleans", const(True), const(False), {}),
    ("numpy-bool", const(np.bool_(True)), const(True), {}),
    ("none", const(None), const(None), {}),
    ("none-vs-number", const(None), const(1), {}),
    ("strings", const("a"), const("a"), {}),
    ("sequence", lambda lib, d: [t([1.0])(lib, d), 2, (3.0, t([4.0])(lib, d))],
     lambda lib, d: [t([1.0])(lib, d), 2, (3.0, t([4.5])(lib, d))], {}),
    ("sequence-length", const([1, 2]), const([1]), {}),
    ("mapping", lambda lib, d: {"b": t([1.0])(lib, d), "a": {"c": 1}},
     lambda lib, d: {"a": {"c": 2}, "b": t([1.0])(lib, d)}, {}),
    ("mapping-keys", const({"a": 1, "b": 2}), const({"b": 2, "c": 3}), {}),
    ("structure-first", lambda lib, d: [t([1.0])(lib, d), [1]], lambda lib, d: [t([2.0])(lib, d), [1, 2]], {}),
    ("msg", t([1.0, 2.0]), t([1.0, 3.0]), dict(msg="custom message")),
    ("msg-callable", lambda lib, d: [t([1.0, 2.0])(lib, d)], lambda lib, d: [t([1.0, 3.0])(lib, d)],
     dict(msg=lambda m: "Header\n\n" + m + "\n\nFooter")),
    ("msg-not-for-structure", const([1, 2]), const([1]), dict(msg="custom message")),
    ("empty", t([]), t([]), {}),
]


@pytest.mark.parametrize("case", CLOSE_CASES, ids=lambda c: c[0])
def test_assert_close_like_torch(case, device):
    _, actual, expected, kw = case
    same_error(lambda: vkt.testing.assert_close(actual(vkt, device), expected(vkt, device), **kw),
               lambda: torch.testing.assert_close(actual(torch, "cpu"), expected(torch, "cpu"), **kw))


def test_assert_close_devices(dev):
    a, b = vkt.tensor([1.0, 2.0]), vkt.tensor([1.0, 2.5], device=dev)
    vulkan = str(b.device)
    with pytest.raises(AssertionError, match=rf"^The values for attribute 'device' do not match: cpu != {vulkan}\.$"):
        vkt.testing.assert_close(a, b)
    with pytest.raises(AssertionError, match=r"Greatest absolute difference: 0\.5 at index \(1,\)"):
        vkt.testing.assert_close(a, b, check_device=False)
    vkt.testing.assert_close(a, b.cpu().to(dev) - vkt.tensor([0.0, 0.5], device=dev), check_device=False)


def test_assert_close_subclasses(device):
    p = vkt.nn.Parameter(vkt.tensor([1.0], device=device))
    x = vkt.tensor([1.0], device=device)
    vkt.testing.assert_close(p, x)
    tp, tx = torch.nn.Parameter(torch.tensor([1.0])), torch.tensor([1.0])
    same_error(lambda: vkt.testing.assert_close(p, x, allow_subclasses=False),
               lambda: torch.testing.assert_close(tp, tx, allow_subclasses=False))


# ---- vkt.testing.make_tensor

DEFAULT_RANGES = {"bool": (0, 2), "uint8": (0, 10), "int32": (-9, 10), "int64": (-9, 10), "float16": (-9, 9),
                  "float32": (-9, 9), "float64": (-9, 9)}  # torch's [low, high) by dtype

MAKE_CASES = [  # (shape arguments, dtype, kwargs)
    ((3, 4), "float32", {}),
    (((2, 5),), "float64", dict(low=-1, high=1)),
    ((4, 6), "float16", dict(low=0.5, high=0.75)),
    ((5, 7), "int64", {}),
    ((5, 7), "int32", dict(low=-2.5, high=3.2)),
    ((20,), "uint8", {}),
    ((20,), "uint8", dict(low=-5, high=3)),
    ((6, 6), "bool", {}),
    ((2, 3, 4), "float32", dict(noncontiguous=True)),
    ((1,), "float32", dict(noncontiguous=True)),
    ((3, 8), "int64", dict(noncontiguous=True, low=0, high=2, exclude_zero=True)),
    ((30,), "float32", dict(low=-1, high=1, exclude_zero=True)),
    ((30,), "bool", dict(exclude_zero=True)),
    ((4, 5), "float32", dict(requires_grad=True)),
    ((), "float64", {}),
    ((0, 3), "float32", {}),
    ((2, 3, 4, 5), "float32", dict(memory_format="channels_last")),
]


@pytest.mark.parametrize("case", MAKE_CASES, ids=lambda c: f"{c[1]}-{c[0]}-{c[2]}")
def test_make_tensor(case, device):
    shape_args, dtype, kw = case
    vkw = {k: getattr(vkt, v) if k == "memory_format" else v for k, v in kw.items()}
    tkw = {k: getattr(torch, v) if k == "memory_format" else v for k, v in kw.items()}
    x = vkt.testing.make_tensor(*shape_args, dtype=getattr(vkt, dtype), device=device, **vkw)
    ref = torch.testing.make_tensor(*shape_args, dtype=getattr(torch, dtype), device="cpu", **tkw)
    assert tuple(x.shape) == tuple(ref.shape) and x.dtype == getattr(vkt, dtype)
    assert x.device.type == device and x.stride() == ref.stride() and x.is_contiguous() == ref.is_contiguous()
    assert x.requires_grad == ref.requires_grad
    values = x.detach().cpu().numpy().astype(np.float64)
    lo, hi = kw.get("low", DEFAULT_RANGES[dtype][0]), kw.get("high", DEFAULT_RANGES[dtype][1])
    if dtype in ("bool", "uint8"):
        lo = max(lo, 0)  # clamped to the dtype
    if dtype in ("bool", "uint8", "int32", "int64"):  # integral bounds are ceiled, high exclusive
        assert ((values >= np.ceil(lo)) & (values < np.ceil(hi))).all()
    else:  # a float drawn below high may round up to it
        assert ((values >= lo) & (values <= hi)).all()
    if kw.get("exclude_zero"):
        assert (values != 0).all()


MAKE_ERRORS = [  # (dtype, kwargs)
    ("int64", dict(requires_grad=True)),
    ("bool", dict(requires_grad=True)),
    ("float32", dict(low=2, high=1)),
    ("int32", dict(low=3, high=3)),
    ("float32", dict(low=float("nan"))),
    ("uint8", dict(low=300, high=400)),
    ("float32", dict(noncontiguous=True, memory_format="contiguous_format")),
]


@pytest.mark.parametrize("case", MAKE_ERRORS, ids=str)
def test_make_tensor_errors(case, device):
    dtype, kw = case
    vkw = {k: getattr(vkt, v) if k == "memory_format" else v for k, v in kw.items()}
    tkw = {k: getattr(torch, v) if k == "memory_format" else v for k, v in kw.items()}
    same_error(lambda: vkt.testing.make_tensor(3, 4, dtype=getattr(vkt, dtype), device=device, **vkw),
               lambda: torch.testing.make_tensor(3, 4, dtype=getattr(torch, dtype), device="cpu", **tkw))


def test_make_tensor_low_equals_high_warns(device):
    with pytest.warns(FutureWarning, match="Passing `low==high`"):
        x = vkt.testing.make_tensor(3, dtype=vkt.float32, device=device, low=2.0, high=2.0)
    assert_close(x, np.full(3, 2.0), rtol=0, atol=0)


def test_make_tensor_is_seeded(device):
    vkt.manual_seed(3)
    a = vkt.testing.make_tensor(50, dtype=vkt.float32, device=device)
    vkt.manual_seed(3)
    b = vkt.testing.make_tensor(50, dtype=vkt.float32, device=device)
    assert_close(a, b.cpu().numpy(), rtol=0, atol=0)


# ---- vkt.nn.attention

def test_sdp_backend_enum():
    from torch.nn.attention import SDPBackend as TorchBackend
    from vkt.nn.attention import SDPBackend
    assert [(k, int(v)) for k, v in SDPBackend.__members__.items()] == \
        [(k, int(v)) for k, v in TorchBackend.__members__.items()]
    assert repr(SDPBackend.MATH) == repr(TorchBackend.MATH) and str(SDPBackend.MATH) == str(TorchBackend.MATH)
    assert SDPBackend(1) is SDPBackend.FLASH_ATTENTION and SDPBackend.MATH.name == "MATH"


SDPA_KERNEL_ARGS = [  # names of SDPBackend members, or other things sdpa_kernel is given
    ("MATH",), ["FLASH_ATTENTION"], ["MATH", "EFFICIENT_ATTENTION", "MATH"], [], ("ERROR",), 3, "math", ("tuple",),
]


def backends_arg(lib, spec):
    enum = lib.nn.attention.SDPBackend
    if isinstance(spec, list):
        return [getattr(enum, name) for name in spec]
    if spec == ("tuple",):
        return (enum.MATH,)
    if isinstance(spec, tuple):
        return getattr(enum, spec[0])
    return spec


@pytest.mark.parametrize("spec", SDPA_KERNEL_ARGS, ids=str)
@pytest.mark.parametrize("set_priority", [False, True])
def test_sdpa_kernel(spec, set_priority, device):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3))
    args = [vkt.tensor(a, device=device) for a in (q, k, v)]
    outside = vkt.nn.functional.scaled_dot_product_attention(*args)

    def use(lib):
        with lib.nn.attention.sdpa_kernel(backends_arg(lib, spec), set_priority=set_priority) as value:
            assert value == {}
            if lib is vkt:
                return vkt.nn.functional.scaled_dot_product_attention(*args)
        return None

    got = same_error(lambda: use(vkt), lambda: use(torch))
    if got[0] is None:
        ref = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)))
        assert_close(use(vkt), outside.cpu().numpy(), rtol=0, atol=0)
        assert_close(outside, ref.numpy(), rtol=1e-5, atol=1e-6)


def test_sdpa_kernel_is_exported():
    import vkt.nn.attention as attention
    assert vkt.nn.attention is attention and attention.WARN_FOR_UNFUSED_KERNELS is False
    assert vkt.nn.MultiheadAttention is vkt.nn.modules.attention.MultiheadAttention
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with attention.sdpa_kernel(attention.SDPBackend.MATH):
            pass
