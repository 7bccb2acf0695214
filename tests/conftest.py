# Shared fixtures and helpers for the vkt test suite.
# Owns the `dev`/`device` fixtures, the validation-layer check after every test, and the
# comparison helpers every test file uses (|got - ref| <= atol + rtol * |ref|, STYLE rule 8).
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import vkt

# Every dtype vkt supports, by name: the same name is the NumPy dtype and the vkt attribute.
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"]
FLOAT_DTYPES = ["float32", "float64", "float16"]
INT_DTYPES = ["int32", "int64", "uint8"]


def vkt_dtype(name):
    return getattr(vkt, name)


def np_dtype(name):
    return np.dtype(name)


@pytest.fixture
def dev():
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan device on this machine")
    return "vulkan"


@pytest.fixture
def unfused(dev):
    """The vulkan device with fusion off: for tests of the stream itself (batches, barriers, dispatch
    counts), where each op must record its dispatch when it is called."""
    vkt.vulkan.set_fusion(False)
    yield dev
    vkt.vulkan.set_fusion(True)


@pytest.fixture
def fusion(dev):
    """The vulkan device with fusion on (the default) and its kernel statistics reset, for the fusion tests;
    fusion is on again afterwards whatever the test set."""
    vkt.vulkan.set_fusion(True)
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    yield dev
    vkt.vulkan.set_fusion(True)


@pytest.fixture(params=["cpu", "vulkan"])
def device(request):
    """Each test that takes `device` runs on the cpu device and on the vulkan device."""
    if request.param == "vulkan":
        return request.getfixturevalue("dev")
    return "cpu"


@pytest.fixture(autouse=True)
def no_validation_messages():
    yield
    messages = vkt.vulkan.validation_messages()
    assert messages == [], "Vulkan validation layer reported:\n" + "\n".join(map(str, messages))


def vulkan_default():
    """The device a tensor made with device="vulkan" lands on: vulkan:0 unless VKT_DEVICE says otherwise."""
    return vkt.device(f"vulkan:{vkt.vulkan.current_device()}")


def to_numpy(x):
    """A NumPy array from a vkt tensor on any device, or from anything np.asarray takes."""
    if isinstance(x, vkt.Tensor):
        return x.cpu().numpy()
    return np.asarray(x)


def assert_close(got, ref, rtol=1e-6, atol=1e-6):
    """|got - ref| <= atol + rtol * |ref| elementwise, in float64; NaN must match NaN, inf must match."""
    got = to_numpy(got)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    nan_g, nan_r = np.isnan(g), np.isnan(r)
    assert np.array_equal(nan_g, nan_r), "NaN positions differ"
    inf_r = np.isinf(r)
    assert np.array_equal(g[inf_r], r[inf_r]), "inf values differ"
    ok = ~(nan_r | inf_r)
    err = np.abs(g[ok] - r[ok])
    tol = atol + rtol * np.abs(r[ok])
    bad = err > tol
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} elements differ; worst |got-ref| = {err.max():.3g}, "
        f"first bad got={g[ok][bad][0]!r} ref={r[ok][bad][0]!r}"
    )


def bits(x):
    """Raw bits of an array: floats as unsigned ints of the same width (so NaN payloads count)."""
    x = np.array(x, order="C")
    if x.dtype.kind == "f":
        return x.view(f"u{x.itemsize}")
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    return x


def assert_bits_equal(got, ref):
    got = np.asarray(got)
    ref = np.asarray(ref)
    assert got.dtype == ref.dtype, f"dtype {got.dtype} != {ref.dtype}"
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    assert np.array_equal(bits(got), bits(ref)), "values differ bitwise"


def run_python(code, env=None, timeout=120, args=None):
    """Run `code` (or `args`, e.g. ["-m", "vkt"]) in a fresh interpreter that imports the same vkt;
    env entries override os.environ (a value of None removes the variable)."""
    full = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(vkt.__file__)))
    full["PYTHONPATH"] = os.pathsep.join(p for p in [pkg_root, full.get("PYTHONPATH", "")] if p)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    return subprocess.run(
        [sys.executable, *(args or ["-c", code])], env=full, capture_output=True, text=True, timeout=timeout
    )


def normalized(message):
    """An error message as compared with torch's: torch.Size([...]) as vkt.Size([...]), and a printed set's items
    sorted (their order depends on the process)."""
    message = message.replace("torch.Size(", "vkt.Size(")
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def raised(call):
    """What call raises, for comparing vkt's errors with torch's: (type name, normalized message), or (None, None)
    where it raises nothing."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e).__name__, normalized(str(e))
    return None, None


def assert_same_outcome(got, ref, tol, what):
    """A distribution's quantity `what` as the distribution tests' outcome() gives it, (value, {parameter: gradient},
    shape), or the error it raised as a string, the same in vkt (got) as in torch (ref): values and gradients within
    tol (assert_close's rtol, atol), a gradient wherever torch has one."""
    value, grads, shape = got
    ref_value, ref_grads, ref_shape = ref
    if isinstance(ref_value, str):
        assert value == ref_value, what
        return
    assert shape == ref_shape, what
    assert_close(value, ref_value, **tol)
    assert (grads is None) == (ref_grads is None), what
    for k in ref_grads or {}:
        if ref_grads[k] is None:  # torch leaves an unused grad None; vkt may give zeros through where()
            assert grads[k] is None or not np.any(grads[k]), (what, k)
        else:
            assert_close(grads[k], ref_grads[k], **tol)
