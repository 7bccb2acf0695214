# User kernels (vkt.RawKernel, vkt.ElementwiseKernel): launches against NumPy, the header vkt prepends,
# every bad input's error (the device still usable after it), out-of-bounds writes, both examples, and a
# kernel inside an autograd.Function under gradcheck.
import os
import subprocess
import sys

import numpy as np
import pytest

import vkt
from conftest import assert_close

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

pytestmark = pytest.mark.skipif(not vkt.vulkan.is_available(), reason="no Vulkan device on this machine")

AXPY = """
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; float alpha; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n)
    y[i] += p.alpha * x[i];
}
"""


def still_usable():
    a = vkt.arange(5, dtype=vkt.float32, device="vulkan")
    assert (a + 1).tolist() == [1, 2, 3, 4, 5]


def test_raw_kernel_axpy():
    x = np.random.rand(1000).astype(np.float32)
    y = np.random.rand(1000).astype(np.float32)
    vy = vkt.tensor(y, device="vulkan")
    axpy = vkt.RawKernel(AXPY)
    axpy(vkt.tensor(x, device="vulkan"), vy, 1000, 2.5, grid=(16, 1, 1), outputs=(vy,))
    assert_close(vy, y + np.float32(2.5) * x, rtol=1e-6)


SCALE = """
layout(std430, binding = 0) buffer X { {{elem}} x[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n)
    x[i] = x[i] * {{elem}}(p.factor) + {{elem}}(OFFSET);
}
"""


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_template_signature_defines(dtype):
    kernel = vkt.RawKernel(SCALE, template={"elem": getattr(vkt, dtype)}, signature="uint n, int factor",
                           defines={"OFFSET": 7}, workgroup_size=32)
    t = vkt.arange(10, dtype=getattr(vkt, dtype), device="vulkan")
    kernel(t, 10, 3, grid=1)
    assert t.tolist() == [i * 3 + 7 for i in range(10)]


def test_view_offset_is_applied():
    kernel = vkt.RawKernel(SCALE, template={"elem": "float"}, signature="uint n, int factor", defines={"OFFSET": 0})
    t = vkt.zeros(64, device="vulkan") + 1
    kernel(t[16:20], 4, 5, grid=1)  # 16 floats in: 64 bytes, a multiple of any adapter's alignment
    expect = np.ones(64, np.float32)
    expect[16:20] = 5
    assert_close(t, expect)


def test_named_entry_and_workgroup_defines():
    kernel = vkt.RawKernel("""
layout(std430, binding = 0) buffer O { uint o[]; };
void fill() { o[gl_LocalInvocationIndex] = WORKGROUP_SIZE_X * 100 + WORKGROUP_SIZE_Y; }
""", name="fill", workgroup_size=(4, 2))
    t = vkt.zeros(8, dtype=vkt.int32, device="vulkan")
    kernel(t, grid=(1,))
    assert t.tolist() == [402] * 8


def test_compile_error_names_user_lines():
    bad = "layout(std430, binding = 0) buffer X { float x[]; };\nvoid main() {\n  x[0] = undefined_thing;\n}\n"
    kernel = vkt.RawKernel(bad)
    with pytest.raises(vkt.KernelCompileError) as e:
        kernel(vkt.zeros(4, device="vulkan"), grid=1)
    assert isinstance(e.value, RuntimeError)
    assert "0:3:" in str(e.value) and "undefined_thing" in str(e.value)
    still_usable()


KEPT_ON_DISK = """
import os, sys, vkt
spirv = os.path.join(vkt.vulkan.cache_dir(), "spirv")
x, y = vkt.ones(4, device="vulkan"), vkt.zeros(4, device="vulkan")
(x + y).tolist()  # whatever the device compiles first
before = set(os.listdir(spirv)) if os.path.isdir(spirv) else set()
kernel = vkt.RawKernel(sys.argv[1])
for _ in range(3):
    kernel(x, y, 4, 1.0, grid=1, outputs=(y,))
print(len(set(os.listdir(spirv)) - before), y.tolist())
"""


def test_compiled_once_and_kept_on_disk(tmp_path):
    # In a process with a cache folder of its own: the suite's other processes write to the shared one.
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", KEPT_ON_DISK, AXPY], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(maxsplit=1) == ["1", "[3.0, 3.0, 3.0, 3.0]\n"]


def test_template_errors():
    with pytest.raises(ValueError, match="not given: elem"):
        vkt.RawKernel(SCALE, template={})
    with pytest.raises(ValueError, match="not used in the source: extra"):
        vkt.RawKernel(SCALE, template={"elem": "float", "extra": 1})
    with pytest.raises(ValueError, match="signature"):
        vkt.RawKernel(AXPY, signature="vec3 v")
    with pytest.raises(ValueError, match="workgroup_size"):
        vkt.RawKernel(AXPY, workgroup_size=(0, 1, 1))
    with pytest.raises(TypeError):
        vkt.RawKernel(b"bytes")


def test_argument_errors():
    axpy = vkt.RawKernel(AXPY)
    x, y = vkt.zeros(4, device="vulkan"), vkt.zeros(4, device="vulkan")
    with pytest.raises(TypeError, match="argument 2 is a str"):
        axpy(x, y, "4", 1.0, grid=1)
    with pytest.raises(ValueError, match="grid must be positive"):
        axpy(x, y, 4, 1.0, grid=(0, 1, 1))
    with pytest.raises(ValueError, match="grid\\[0\\]"):
        axpy(x, y, 4, 1.0, grid=(2**32 - 1, 1, 1))
    with pytest.raises(TypeError, match="grid"):
        axpy(x, y, 4, 1.0, grid=(1, 1, 1, 1))
    with pytest.raises(RuntimeError, match="same device"):
        axpy(x, vkt.zeros(4), 4, 1.0, grid=1)
    with pytest.raises(ValueError, match="outputs"):
        axpy(x, y, 4, 1.0, grid=1, outputs=(vkt.zeros(4, device="vulkan"),))
    with pytest.raises(ValueError, match="at least one tensor"):
        axpy(4, 1.0, grid=1)
    signed = vkt.RawKernel(SCALE, template={"elem": "float"}, signature="uint n, int factor", defines={"OFFSET": 0})
    with pytest.raises(TypeError, match="takes 2 scalar arguments"):
        signed(x, 4, grid=1)
    with pytest.raises(TypeError, match="factor is int"):
        signed(x, 4, 1.5, grid=1)
    with pytest.raises(OverflowError):
        signed(x, -1, 1, grid=1)
    still_usable()


def test_push_block_over_limit():
    limit = vkt._C._kernel_limits(vkt.vulkan.current_device())["max_push_constants"]
    n = limit // 4 + 1
    kernel = vkt.RawKernel(AXPY)
    with pytest.raises(ValueError, match="push-constant block"):
        kernel(vkt.zeros(4, device="vulkan"), vkt.zeros(4, device="vulkan"), *([1] * n), grid=1)
    still_usable()


def test_cpu_device_needs_a_fallback():
    axpy = vkt.RawKernel(AXPY)
    with pytest.raises(RuntimeError, match="cpu="):
        axpy(vkt.zeros(4), vkt.zeros(4), 4, 1.0, grid=1)

    def on_cpu(x, y, n, alpha):
        y.add_(alpha * x)

    y = vkt.zeros(4)
    vkt.RawKernel(AXPY, cpu=on_cpu)(vkt.ones(4), y, 4, 2.0, grid=1)
    assert y.tolist() == [2.0] * 4


@pytest.mark.skipif(not vkt.vulkan.is_available() or
                    not vkt._C._kernel_limits(vkt.vulkan.current_device())["robust_buffer_access"],
                    reason="the adapter has no robustBufferAccess")
def test_out_of_bounds_write_spares_neighbours():
    stray = vkt.RawKernel("""
layout(std430, binding = 0) buffer X { float x[]; };
void main() { x[gl_GlobalInvocationID.x] = -1.0; }
""", workgroup_size=256)
    tensors = [vkt.ones(4, device="vulkan") for _ in range(8)]
    stray(tensors[3], grid=(64, 1, 1))  # 16384 writes into a 4-float tensor
    for k, t in enumerate(tensors):
        assert t.tolist() == ([-1.0] * 4 if k == 3 else [1.0] * 4)


def test_launch_is_recorded_and_kept_alive():
    axpy = vkt.RawKernel(AXPY)
    y = vkt.zeros(256, device="vulkan")
    for _ in range(5):
        axpy(vkt.ones(256, device="vulkan"), y, 256, 1.0, grid=4, outputs=(y,))  # x is freed at once
    assert_close(y, np.full(256, 5.0))


def test_reads_a_pending_fused_value():
    axpy = vkt.RawKernel(AXPY)
    a = vkt.arange(8, dtype=vkt.float32, device="vulkan")
    x = (a * 2).relu()  # may be pending under fusion
    y = vkt.zeros(8, device="vulkan")
    axpy(x, y, 8, 1.0, grid=1, outputs=(1,))
    assert y.tolist() == [2.0 * i for i in range(8)]


# ---- ElementwiseKernel ----

FMA = vkt.ElementwiseKernel("T x, T y", "T z", "z = x * y + T(1)", "fma1")

CASES = [  # (x shape, y shape, x transposed)
    ((5, 7), (5, 7), False),
    ((5, 7), (7,), False),
    ((3, 1, 4), (2, 4), False),
    ((6, 5), (6, 5), True),
    ((), (3,), False),
]


@pytest.mark.parametrize("xs,ys,transposed", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_elementwise_broadcast_strides(xs, ys, transposed, dtype):
    limits = vkt._C._kernel_limits(vkt.vulkan.current_device())
    if dtype in ("float64", "int64") and not limits[dtype]:
        pytest.skip(f"the adapter has no {dtype}")
    rng = np.random.default_rng(0)
    x = (rng.random(xs) * 10).astype(dtype)
    y = (rng.random(ys) * 10).astype(dtype)
    vx = vkt.tensor(x.T.copy() if transposed else x, device="vulkan")
    vx = vx.t() if transposed else vx
    if transposed:
        x = x.T.copy().T
    z = FMA(vx, vkt.tensor(y, device="vulkan"))
    assert z.dtype == getattr(vkt, dtype)
    assert_close(z, (x.astype(np.float64) * y + 1).astype(dtype), rtol=1e-6)


def test_elementwise_slices_scalars_and_outputs():
    k = vkt.ElementwiseKernel("float x, float s", "float lo, float hi", "lo = min(x, s); hi = max(x, s)", "clamp2")
    x = np.random.rand(8, 6).astype(np.float32)
    vx = vkt.tensor(x, device="vulkan")[1::2, ::3]
    lo, hi = k(vx, 0.5)
    assert_close(lo, np.minimum(x[1::2, ::3], 0.5))
    assert_close(hi, np.maximum(x[1::2, ::3], 0.5))


def test_elementwise_operands_within_push_limit():
    k = vkt.ElementwiseKernel("T a, T b, T c, T d", "T z", "z = a + b * c - d", "five")
    args = [vkt.full((3,), float(v), device="vulkan") for v in (1, 2, 3, 4)]
    need = vkt._C._kernel_elementwise_push_size(5)
    if need > vkt._C._kernel_limits(vkt.vulkan.current_device())["max_push_constants"]:
        with pytest.raises(ValueError, match=f"push-constant block is {need} bytes"):
            k(*args)
        still_usable()
    else:
        assert k(*args).tolist() == [3.0] * 3


def test_elementwise_errors():
    x = vkt.zeros(3, device="vulkan")
    with pytest.raises(TypeError, match="takes 2 inputs"):
        FMA(x)
    with pytest.raises(TypeError, match="x is float32 but T is int32|y is float32 but T is int32"):
        FMA(vkt.zeros(3, dtype=vkt.int32, device="vulkan"), x)
    with pytest.raises(RuntimeError, match="broadcast"):
        FMA(x, vkt.zeros(4, device="vulkan"))
    with pytest.raises(RuntimeError, match="Vulkan device"):
        FMA(vkt.zeros(3), vkt.zeros(3))
    with pytest.raises(vkt.KernelCompileError, match="0:1:"):
        vkt.ElementwiseKernel("T x", "T z", "z = nope(x)", "bad")(x)
    with pytest.raises(ValueError, match="repeated"):
        vkt.ElementwiseKernel("T x", "T x", "x = x", "dup")
    still_usable()


# ---- autograd and the examples ----

class Square(vkt.autograd.Function):
    kernel = vkt.ElementwiseKernel("T x", "T y", "y = x * x", "square")
    grad = vkt.ElementwiseKernel("T x, T g", "T d", "d = T(2) * x * g", "square_grad")

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Square.kernel(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return Square.grad(x, g)


def test_kernel_in_autograd_function_gradcheck():
    if not vkt._C._kernel_limits(vkt.vulkan.current_device())["float64"]:
        pytest.skip("the adapter has no float64")
    x = vkt.randn(3, 4, dtype=vkt.float64, device="vulkan", requires_grad=True)
    assert vkt.autograd.gradcheck(Square.apply, (x,))


def test_example_custom_kernel(dev):
    import custom_kernel

    diffs = custom_kernel.check("vulkan", batch=2, m=33, k=20, n=17)
    assert max(diffs) < 1e-4, diffs
    first, last = custom_kernel.train("vulkan", steps=10)
    assert last < first


def test_example_custom_kernel_batched_rhs_and_bias():
    import custom_kernel

    lhs, rhs, bias = (vkt.randn(*s, device="vulkan") for s in ((3, 9, 5), (3, 5, 18), (3, 9, 18)))
    assert_close(custom_kernel.fused_matmul_add_relu(lhs, rhs, bias), custom_kernel.reference(lhs, rhs, bias).cpu().numpy(),
                 rtol=1e-5, atol=1e-5)


def test_example_softmax_kernel():
    import softmax_kernel

    fwd, bwd = softmax_kernel.check("vulkan", rows=5, cols=100, temperature=0.7)
    assert fwd < 1e-6 and bwd < 1e-5
