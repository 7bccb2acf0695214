# NumPy -> vkt -> NumPy round trips: bit-exact for every dtype and size, non-contiguous inputs,
# dtype inference from Python scalars and nested lists, item/tolist/repr.
import numpy as np
import pytest

import vkt
from conftest import DTYPES, assert_bits_equal, vkt_dtype, vulkan_default

SIZES = [0, 1, 3, 1023, 2**20 + 7]

# Special float bit patterns placed at the front of float arrays: quiet NaN with a payload, a
# signalling NaN, negative NaN, +-inf, -0.0, the smallest subnormal, the largest finite value.
SPECIAL_BITS = {
    "float16": [0x7E01, 0x7C01, 0xFE00, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x7BFF],
    "float32": [0x7FC00001, 0x7F800001, 0xFFC00000, 0x7F800000, 0xFF800000, 0x80000000, 0x1, 0x7F7FFFFF],
    "float64": [
        0x7FF8000000000001,
        0x7FF0000000000001,
        0xFFF8000000000000,
        0x7FF0000000000000,
        0xFFF0000000000000,
        0x8000000000000000,
        0x1,
        0x7FEFFFFFFFFFFFFF,
    ],
}


def sample(dtype, n, seed=0):
    """n values of dtype covering its range; floats start with NaN/inf/-0.0/subnormal patterns."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    a = (rng.standard_normal(n) * 100).astype(dt)
    special = np.array(SPECIAL_BITS[dtype], dtype=f"u{dt.itemsize}").view(dt)
    k = min(n, special.size)
    a[:k] = special[:k]
    return a


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_bit_exact(device, dtype, n):
    a = sample(dtype, n)
    t = vkt.tensor(a, device=device)
    assert t.dtype == vkt_dtype(dtype)
    assert tuple(t.shape) == (n,)
    assert t.device.type == device
    assert_bits_equal(np.asarray(t), a)
    assert_bits_equal(t.cpu().numpy(), a)


def test_roundtrip_past_max_storage_buffer_range(dev):
    # One uint8 tensor just over maxStorageBufferRange bytes: the round trip must split or refuse
    # clearly, never truncate. A period of 251 makes any shifted or dropped chunk visible.
    limit = vkt.vulkan.get_device_properties(0).max_storage_buffer_range
    n = limit + 1
    a = np.resize(np.arange(251, dtype=np.uint8), n)
    t = vkt.tensor(a, device=dev)
    assert tuple(t.shape) == (n,)
    back = t.cpu().numpy()
    del t
    assert back.shape == (n,)
    assert np.array_equal(back[-4096:], a[-4096:])
    assert np.array_equal(back, a)


def test_device_copies_past_max_storage_buffer_range(dev):
    # Device work on a tensor past the binding limit is split (or refused clearly), never truncated.
    limit = vkt.vulkan.get_device_properties(0).max_storage_buffer_range
    a = np.resize(np.arange(251, dtype=np.uint8), limit + 4096)
    t = vkt.tensor(a, device=dev)
    try:
        shifted = np.asarray(t[7:].contiguous())
        filled = np.asarray(vkt.full((limit // 4 + 17,), 2.5, device=dev))
    except RuntimeError as e:
        assert "range" in str(e) or "limit" in str(e), e
        return
    assert np.array_equal(shifted, a[7:])
    assert filled.shape == (limit // 4 + 17,) and (filled == 2.5).all()


NONCONTIGUOUS = [
    ("reversed", lambda a: a[::-1]),
    ("step2_cols", lambda a: a[:, ::2]),
    ("transpose", lambda a: a.T),
    ("reversed_cols", lambda a: a[:, ::-1]),
    ("mixed_steps", lambda a: a[::-2, 1::3]),
    ("offset_slice", lambda a: a[3:, 2:5]),
    ("transposed_reversed", lambda a: a.T[::-1, ::-1]),
    ("broadcast", lambda a: np.broadcast_to(a[:1], (4, a.shape[1]))),
]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name,fn", NONCONTIGUOUS, ids=[c[0] for c in NONCONTIGUOUS])
def test_roundtrip_noncontiguous_input(device, name, fn, dtype):
    a = fn(sample(dtype, 7 * 11, seed=1).reshape(7, 11))
    assert not a.flags.c_contiguous
    t = vkt.tensor(a, device=device)
    assert tuple(t.shape) == a.shape
    assert_bits_equal(np.asarray(t), np.ascontiguousarray(a))
    assert_bits_equal(t.cpu().numpy(), np.ascontiguousarray(a))


def test_roundtrip_3d_and_0d(device):
    a = sample("float32", 2 * 3 * 5, seed=2).reshape(2, 3, 5).transpose(2, 0, 1)
    assert_bits_equal(np.asarray(vkt.tensor(a, device=device)), np.ascontiguousarray(a))
    z = np.array(2.5, dtype=np.float64)
    t = vkt.tensor(z, device=device)
    assert tuple(t.shape) == ()
    assert_bits_equal(np.asarray(t), z)


# (data, expected dtype name, expected shape)
INFERENCE = [
    (1.5, "float32", ()),
    (3, "int64", ()),
    (True, "bool", ()),
    (np.arange(4, dtype=np.float64), "float64", (4,)),
    (np.arange(4, dtype=np.int32), "int32", (4,)),
    (np.array([1, 2], dtype=np.uint8), "uint8", (2,)),
    (np.array([1.0, 2.0], dtype=np.float16), "float16", (2,)),
    (np.float32(1.5), "float32", ()),
    ([[1, 2], [3, 4]], "int64", (2, 2)),
    ([[1.0, 2], [3, 4]], "float32", (2, 2)),
    ([1, 2.5], "float32", (2,)),
    ([True, False], "bool", (2,)),
    ([True, 2], "int64", (2,)),
    ([[[1], [2]], [[3], [4]]], "int64", (2, 2, 1)),
    ([], "float32", (0,)),
    ((1, 2, 3), "int64", (3,)),
]


@pytest.mark.parametrize("data,dtype,shape", INFERENCE, ids=[repr(c[0])[:30] for c in INFERENCE])
def test_dtype_inference(device, data, dtype, shape):
    t = vkt.tensor(data, device=device)
    assert t.dtype == vkt_dtype(dtype)
    assert tuple(t.shape) == shape
    ref = np.asarray(data, dtype=dtype)
    assert_bits_equal(np.asarray(t), ref)


def test_default_device_is_cpu():
    t = vkt.tensor([1.0, 2.0])
    assert t.device.type == "cpu"
    assert str(t.device) == "cpu"


@pytest.mark.parametrize("data,expected,pytype", [(1.5, 1.5, float), (3, 3, int), (True, True, bool), (-7, -7, int)])
def test_item(device, data, expected, pytype):
    got = vkt.tensor(data, device=device).item()
    assert type(got) is pytype
    assert got == expected


def test_item_single_element_nd(device):
    assert vkt.tensor([[2.5]], device=device).item() == 2.5
    assert vkt.tensor(np.array([7], dtype=np.uint8), device=device).item() == 7


@pytest.mark.parametrize(
    "data",
    [[[1, 2], [3, 4]], [1.5, -2.0, 0.25], [[True, False]], 5, 2.5, [], [[1.0], [2.0], [3.0]]],
    ids=repr,
)
def test_tolist(device, data):
    t = vkt.tensor(data, device=device)
    ref = np.asarray(data, dtype=np.asarray(t).dtype).tolist()
    got = t.tolist()
    assert got == ref
    assert type(got) is type(ref)


def test_tolist_of_view(device):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = vkt.tensor(a, device=device)
    assert t.T.tolist() == a.T.tolist()
    assert t[:, ::2].tolist() == a[:, ::2].tolist()


def test_repr(device):
    t = vkt.tensor([1.0, 2.0, 3.0], device=device)
    r = repr(t)
    assert "tensor(" in r
    if device == "vulkan":
        assert f"device='{vulkan_default()}'" in r
    assert "1." in r and "3." in r


def test_repr_shows_dtype_when_not_default(device):
    r = repr(vkt.tensor(np.array([1, 2], dtype=np.int32), device=device))
    assert "tensor(" in r and "int32" in r
