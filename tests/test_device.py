# Devices: vkt.device parsing, vkt.vulkan queries, adapter ranking, the VKT_DEVICE override,
# the no-Vulkan path (no loader, no driver) and `python -m vkt`; the last three in subprocesses.
import json
import os
import re

import numpy as np
import pytest

import vkt
from conftest import run_python, vulkan_default

# (string, repr, str, type, index)
DEVICES = [
    ("vulkan:0", "device(type='vulkan', index=0)", "vulkan:0", "vulkan", 0),
    ("vulkan", "device(type='vulkan')", "vulkan", "vulkan", None),
    ("cpu", "device(type='cpu')", "cpu", "cpu", None),
]


@pytest.mark.parametrize("spec,rep,text,typ,index", DEVICES)
def test_device_parse(spec, rep, text, typ, index):
    d = vkt.device(spec)
    assert repr(d) == rep
    assert str(d) == text
    assert d.type == typ
    assert d.index == index
    assert vkt.device(d) == d


def test_device_equality_and_hash():
    a, b = vkt.device("vulkan:0"), vkt.device("vulkan:0")
    assert a == b and not (a != b)
    assert hash(a) == hash(b)
    assert a != vkt.device("cpu")
    assert vkt.device("cpu") == vkt.device("cpu")
    assert len({a, b, vkt.device("cpu"), vkt.device("cpu")}) == 2
    assert {a: 1}[b] == 1


@pytest.mark.parametrize("spec", ["cuda", "vulkan:x", "vulkan:-1", "", "vulkan:0:1", "vulkan0", "cpu:x", "Vulkan"])
def test_bad_device_string(spec):
    with pytest.raises(RuntimeError):
        vkt.device(spec)
    with pytest.raises(RuntimeError):
        vkt.zeros(2, device=spec)


def test_device_index_out_of_range():
    # As PyTorch: an index past the last adapter fails at the latest when a tensor is put there.
    with pytest.raises(RuntimeError):
        vkt.zeros(2, device="vulkan:99")
    with pytest.raises(RuntimeError):
        vkt.tensor([1.0]).to("vulkan:99")


def test_tensor_device_attribute(dev):
    t = vkt.zeros(3, device=dev)
    assert t.device == vulkan_default()
    assert vkt.zeros(3, device=vkt.device("vulkan:0")).device == vkt.device("vulkan:0")
    assert vkt.zeros(3).device == vkt.device("cpu")


def test_device_count(dev):
    assert vkt.vulkan.device_count() >= 1


def test_device_name(dev):
    name = vkt.vulkan.get_device_name(0)
    assert isinstance(name, str) and name
    assert vkt.vulkan.get_device_name() == name


def test_device_properties(dev):
    p = vkt.vulkan.get_device_properties(0)
    assert p.name == vkt.vulkan.get_device_name(0)
    assert p.type in ("discrete", "integrated", "virtual", "cpu", "other")
    assert isinstance(p.api_version, str) and re.fullmatch(r"1\.\d+\.\d+", p.api_version)
    assert isinstance(p.vendor_id, int)
    assert isinstance(p.total_memory, int) and p.total_memory > 0
    assert isinstance(p.subgroup_size, int) and p.subgroup_size >= 1
    assert p.subgroup_size & (p.subgroup_size - 1) == 0
    # Vulkan's required minimums: maxStorageBufferRange 2^27, maxComputeSharedMemorySize 16 KiB.
    assert isinstance(p.max_storage_buffer_range, int) and p.max_storage_buffer_range >= 2**27
    assert isinstance(p.max_shared_memory, int) and p.max_shared_memory >= 16384
    assert isinstance(p.cooperative_matrix, bool)


def test_device_properties_bad_index(dev):
    with pytest.raises((RuntimeError, ValueError, IndexError, AssertionError)):
        vkt.vulkan.get_device_properties(vkt.vulkan.device_count())


def test_synchronize_waits_for_submitted_batches(dev):
    # An op whose dispatch ends a batch submits it at once (the 1024th, or an eager one to an idle GPU);
    # synchronize must still wait for that batch, though none is being recorded.
    x = vkt.zeros(1 << 20, device=dev)
    vkt.vulkan.synchronize()
    for n in range(1, 5000):
        x.add_(1.0)
        if not vkt._C._stream_state()[0]:
            break
    vkt.vulkan.synchronize()
    assert vkt._C._stream_state() == (False, True)
    assert np.all(np.asarray(x) == n)


def test_barriers_within_batches(unfused):
    dev = unfused
    # Each batch waits for the one before it (a timeline semaphore), so a dispatch reading what an earlier
    # batch wrote needs no barrier; within a batch, one reading what an earlier dispatch wrote needs one,
    # and one touching nothing written since needs none.
    x = vkt.ones(1000, device=dev)
    y = x + 1
    vkt.vulkan.synchronize()  # y's batch is submitted: the next dispatch starts a new one
    before = vkt._C._barriers()
    z = y * 2
    assert vkt._C._barriers() == before
    w = z + 1
    assert vkt._C._barriers() == before + 1
    v = x * 3
    assert vkt._C._barriers() == before + 1
    assert np.all(np.asarray(w) == 5) and np.all(np.asarray(v) == 3)


def test_current_set_synchronize(dev):
    current = vkt.vulkan.current_device()
    if not os.environ.get("VKT_DEVICE"):
        assert current == 0
    vkt.vulkan.set_device(current)
    assert vkt.vulkan.current_device() == current
    t = vkt.ones(100, device=dev)
    vkt.vulkan.synchronize()
    assert np.asarray(t).sum() == 100


def test_is_available_is_bool():
    assert isinstance(vkt.vulkan.is_available(), bool)
    assert vkt.vulkan.device_count() >= (1 if vkt.vulkan.is_available() else 0)


# (adapters as (type, device-local bytes), indices best first)
RANKING = [
    ([("cpu", 8 << 30), ("discrete", 4 << 30), ("integrated", 16 << 30), ("discrete", 8 << 30)], [3, 1, 2, 0]),
    ([], []),
    ([("cpu", 0)], [0]),
    ([("other", 0), ("cpu", 0), ("virtual", 0), ("integrated", 0), ("discrete", 0)], [4, 3, 2, 1, 0]),
    ([("other", 100 << 30), ("cpu", 1)], [1, 0]),
    ([("virtual", 1 << 30), ("integrated", 1 << 20)], [1, 0]),
    ([("discrete", 8 << 30), ("discrete", 8 << 30), ("discrete", 80 << 30)], [2, 0, 1]),
    ([("cpu", 2 << 30), ("cpu", 2 << 30), ("cpu", 2 << 30)], [0, 1, 2]),
    ([("integrated", 24 << 30), ("discrete", 1 << 30), ("cpu", 64 << 30)], [1, 0, 2]),
]


@pytest.mark.parametrize("adapters,expected", RANKING)
def test_rank_adapters(adapters, expected):
    assert list(vkt._C._rank_adapters(adapters)) == expected


# What the child reports: the chosen adapter's type, or the error creating a vulkan tensor raised.
PROBE = """
import json, vkt
out = {}
try:
    out["types"] = [vkt.vulkan.get_device_properties(i).type for i in range(vkt.vulkan.device_count())]
except RuntimeError as e:
    out["types_error"] = str(e)
try:
    t = vkt.tensor([1.0, 2.0, 3.0], device="vulkan")
    out["values"] = t.cpu().tolist()
    out["type"] = vkt.vulkan.get_device_properties(vkt.vulkan.current_device()).type
    out["name"] = vkt.vulkan.get_device_name(vkt.vulkan.current_device())
except RuntimeError as e:
    out["error"] = str(e)
print(json.dumps(out))
"""


def probe(env):
    r = run_python(PROBE, env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def adapter_types():
    """Types of all adapters as a child process without VKT_DEVICE sees them."""
    return probe({"VKT_DEVICE": None}).get("types", [])


@pytest.mark.parametrize("choice", ["cpu", "discrete", "integrated"])
def test_vkt_device_by_type(dev, choice):
    out = probe({"VKT_DEVICE": choice})
    if choice in adapter_types():
        assert out.get("type") == choice, out
        assert out["values"] == [1.0, 2.0, 3.0]
    else:
        assert "error" in out, out
        assert "VKT_DEVICE" in out["error"]


def test_vkt_device_bad_index(dev):
    out = probe({"VKT_DEVICE": str(max(7, len(adapter_types())))})
    assert "error" in out, out
    assert "VKT_DEVICE" in out["error"]


def test_vkt_device_index_zero(dev):
    out = probe({"VKT_DEVICE": "0"})
    assert out.get("values") == [1.0, 2.0, 3.0], out


def test_default_choice_is_best_adapter(dev):
    # Without VKT_DEVICE the best-ranked adapter is device 0 (lavapipe only when nothing better).
    out = probe({"VKT_DEVICE": None})
    order = ["discrete", "integrated", "virtual", "cpu", "other"]
    assert out["types"], out
    assert out.get("type") == min(out["types"], key=order.index), out


NO_VULKAN = """
import json, vkt
out = {"available": vkt.vulkan.is_available(), "count": vkt.vulkan.device_count()}
out["cpu"] = [vkt.zeros(3).tolist(), vkt.tensor([[1, 2]]).T.contiguous().tolist()]
try:
    vkt.zeros(3, device="vulkan")
    out["error"] = None
except RuntimeError as e:
    out["error"] = str(e)
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    "env",
    [
        {"VKT_VULKAN_LIBRARY": "/nonexistent/libvulkan.so.1"},
        {"VK_ICD_FILENAMES": "/nonexistent.json", "VK_DRIVER_FILES": "/nonexistent.json"},
    ],
    ids=["no_loader", "no_driver"],
)
def test_no_vulkan(env):
    env = dict(env, VKT_DEVICE=None)
    r = run_python(NO_VULKAN, env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["available"] is False
    assert out["count"] == 0
    assert out["cpu"] == [[0.0, 0.0, 0.0], [[1], [2]]]
    assert out["error"] is not None, "a vulkan tensor was created without Vulkan"
    assert "Vulkan" in out["error"]


def test_python_m_vkt(dev):
    r = run_python(None, args=["-m", "vkt"])
    assert r.returncode == 0, r.stderr
    for i in range(vkt.vulkan.device_count()):
        assert vkt.vulkan.get_device_name(i) in r.stdout
    assert "cache" in r.stdout.lower()


def test_python_m_vkt_without_vulkan():
    # A diagnostic tool must still run, and say so, where Vulkan is missing.
    r = run_python(None, {"VKT_VULKAN_LIBRARY": "/nonexistent/libvulkan.so.1"}, args=["-m", "vkt"])
    assert r.returncode == 0, r.stderr
    assert "cache" in r.stdout.lower()


# The tensor-core shader as compiled for a float16 product, with and without VEC8 staging.
COOP_DEFINES = ["#define TO float16_t\n#define TA float16_t\n#define TB float16_t\n#define BM 128\n#define BN 128\n"
                "#define BK 32\n#define TM 0\n#define TN 0\n#define ACC float\n" + extra
                for extra in ("", "#define VEC8\n#define A_K_FAST\n#define B_N_FAST\n")]


def spirv_ops(code):
    """(opcode, operands) of each instruction of a SPIR-V module."""
    words = np.frombuffer(code, dtype=np.uint32)
    assert words[0] == 0x07230203
    ops, i = [], 5
    while i < len(words):
        n = int(words[i] >> 16)
        ops.append((int(words[i] & 0xFFFF), [int(w) for w in words[i + 1:i + n]]))
        i += n
    return ops


@pytest.mark.parametrize("defines", COOP_DEFINES)
def test_cooperative_matrix_khr_rewrite(defines):
    # glslang 12 writes the NV form; adapters with VK_KHR_cooperative_matrix get it rewritten: KHR
    # opcodes, each matrix type with its use (A 16x16, B 16x8, accumulator), layouts before strides.
    nv = spirv_ops(vkt._C._shader_spirv("matmul_coop.comp", defines, False))
    khr = spirv_ops(vkt._C._shader_spirv("matmul_coop.comp", defines, True))
    assert (17, [5357]) in nv and (17, [6022]) in khr and (17, [5357]) not in khr
    assert not [op for op, _ in khr if 5358 <= op <= 5362]
    consts = {args[1]: args[2] for op, args in khr if op == 43 and len(args) == 3}
    halves = {args[0] for op, args in khr if op == 22 and args[1:] == [16]}
    uses = {}
    for op, args in khr:
        if op == 4456:  # OpTypeCooperativeMatrixKHR result, component, scope, rows, columns, use
            shape = (args[1] in halves, consts[args[3]], consts[args[4]])
            uses[shape] = consts[args[5]]
    assert uses == {(True, 16, 16): 0, (True, 16, 8): 1, (False, 16, 8): 2}
    muladds = [args for op, args in khr if op == 4459]
    loads = [args for op, args in khr if op == 4457]
    stages = 2 if "VEC8" in defines else 1  # with VEC8 the slice loop is written out for each shared stage
    assert len(muladds) == 16 * stages and len(loads) == 8 * stages  # the fragments are written out, not arrays
    assert all(consts[args[3]] == 0 for args in loads)  # row-major layout, then the stride
    assert len(khr) == len(nv) + 3  # the constants 0, 1, 2 for uses and layouts


# The workgroup-scope shader (VK_NV_cooperative_matrix2) for each way of reading a and b, aligned or not,
# with and without the bias and relu epilogue.
COOP2_DEFINES = [
    "#define TO float16_t\n#define TA float16_t\n#define TB float16_t\n#define BM 128\n#define BN 128\n#define BK 64\n"
    "#define TM 0\n#define TN 0\n#define ACC float\n#define LOCAL_SIZE 128\n#define UNROLL 2\n" + extra
    for extra in ("", "#define A_K_FAST\n#define B_N_FAST\n#define ALIGNED\n", "#define B_N_FAST\n#define ALIGNED\n",
                  "#define TC float16_t\n#define BIAS\n#define RELU\n#define A_K_FAST\n")]


# A fused epilogue of one op, x @ w + bias with the product kept (csrc/ops/fuse.c's generate() writes these).
COOP2_EPILOGUE = COOP2_DEFINES[1] + (
    "#define EPILOGUE\n#define NOUT 1\n#define NREAD 1\n#define A_BINDING 3\n#define B_BINDING 4\n#define C float\n"
    "#define C_FLOAT\n#define OUT_BITS 16\n#define NOPS 3\n#define MAX_OPS 3\n#define NPARAMS 1\n"
    "#define OP0(x, y, P0, P1) (x + y * P1)\n#define ST0(v) float16_t(v)\n"
    "#define FUSED_BUFFERS layout(std430, binding = 0) writeonly restrict buffer B0 { float16_t b0_[]; }; "
    "layout(std430, binding = 1) readonly restrict buffer B1 { float16_t b1_[]; }; "
    "layout(std430, binding = 2) writeonly restrict buffer B2 { float16_t b2_[]; };\n"
    "#define FUSED_DECLARE C l0[ELEMS]; C l1[ELEMS];\n"
    "#define FUSED_LOAD(k) l0[k] = C(b1_[idx[1]]); l1[k] = rounded_half(MM_VALUE(k));\n"
    "#define FUSED_VALUES(k) precise C v0 = rounded_half(ST0(OP0(l1[k], l0[k], C(0), decode(p.param[0]))));\n"
    "#define FUSED_STORES(k) b0_[idx[0]] = float16_t(v0); b2_[idx[2]] = float16_t(l1[k]);\n"
    "#define FUSED_EVAL(k) FUSED_VALUES(k) FUSED_STORES(k)\n#define FUSED_RESULT v0\n#define RESULT0_TYPE float16_t\n"
    "#define MM_KEPT b2_\n")


@pytest.mark.skipif(not vkt._C._compiler_has_coop2(),
                    reason="vkt links Debian 12's glslang 12 (make builds glslang 15 into build/glslang)")
@pytest.mark.parametrize("defines", COOP2_DEFINES + [COOP2_EPILOGUE], ids=[*map(str, range(4)), "epilogue"])
def test_cooperative_matrix2_shader(defines):
    # SPIR-V 1.6 with KHR matrices, tensor-addressed loads of both operands (clamped, and unclamped too when
    # ALIGNED), a per-element epilogue and a tensor-addressed store.
    code = vkt._C._shader_spirv("matmul_coop2.comp", defines, False)
    ops = spirv_ops(code)
    assert np.frombuffer(code, dtype=np.uint32)[1] == 0x00010600
    assert (17, [6022]) in ops and (17, [5433]) in ops  # CooperativeMatrixKHR, TensorAddressingNV
    counts = {op: sum(1 for o, _ in ops if o == op) for op in (5367, 5368, 5369, 4459)}
    loops = 2 if "ALIGNED" in defines else 1  # an unclamped loop for tiles inside out, and a clamped one
    assert counts[5367] == 2 * loops and counts[4459] == loops
    assert counts[5368] == (2 if "MM_KEPT" in defines else 1) and counts[5369] == 1  # the kept product's store
