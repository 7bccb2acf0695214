# Differences from PyTorch found by a differential sweep, each call run by torch (the CPU reference) and by
# vkt on the cpu and vulkan devices on the same inputs: the results' dtype, shape and values, or the
# exception's type, must agree. A case is (name, call taking the library and a device, tolerance).
import warnings

import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")


def arr(L, device, a):
    return torch.from_numpy(np.array(a)) if L is torch else vkt.tensor(np.array(a), device=device)


def images(L, device):
    return arr(L, device, np.random.default_rng(3).integers(0, 256, (2, 3, 7, 9)).astype(np.uint8))


def interp(**kw):
    return lambda L, d: L.nn.functional.interpolate(images(L, d), **kw)


def labels(L, d):
    return arr(L, d, [[0, 3, 1, 3], [2, 2, 0, 1]])


def u8(L, d):
    return arr(L, d, np.array([0, 1, 7, 200, 255], np.uint8))


def grid(L, d):
    return L.arange(12, device=d).reshape(3, 4)


def setitem(key, value):
    def call(L, d):
        x = grid(L, d)
        x[key(L, d) if callable(key) else key] = value
        return x
    return call


CASES = [
    # x in t is (t == x).any(), not Python's row-by-row comparison
    ("contains", lambda L, d: (3 in labels(L, d), 4 in labels(L, d), 2.0 in labels(L, d),
                               L.tensor(1) in labels(L, d)), 0),
    ("contains_bad", lambda L, d: "a" in labels(L, d), 0),
    # uint8 images resize in uint8 (PyTorch rounds and saturates each separable pass)
    ("interp_bilinear_u8", interp(size=(5, 11), mode="bilinear"), 1),
    ("interp_bilinear_u8_align", interp(scale_factor=1.5, mode="bilinear", align_corners=True), 1),
    ("interp_bilinear_u8_down", interp(size=(3, 4), mode="bilinear"), 1),
    ("interp_bilinear_u8_aa", interp(size=(3, 4), mode="bilinear", antialias=True), 1),
    ("interp_bicubic_u8", interp(size=(9, 5), mode="bicubic"), 1),
    ("interp_bilinear_int64", lambda L, d: L.nn.functional.interpolate(images(L, d).long(), scale_factor=2,
                                                                         mode="bilinear"), 0),
    ("interp_area_u8", interp(size=(3, 4), mode="area"), 0),
    # vkt.tensor infers dtypes as torch.tensor: NumPy scalars and 0-d tensors keep theirs, promoted together
    ("tensor_np_arrays", lambda L, d: L.tensor([np.ones(3), np.arange(3.0)], device=d), 0),
    ("tensor_np_mixed", lambda L, d: L.tensor([np.ones(2, np.float32), np.zeros(2, np.int64)], device=d), 0),
    ("tensor_np_scalars", lambda L, d: (L.tensor([np.float64(1.5)]), L.tensor([np.int32(2)]),
                                        L.tensor([np.bool_(True)]), L.tensor([np.float16(1), 2])), 0),
    ("tensor_0d_tensors", lambda L, d: (L.tensor([L.tensor(1.5, dtype=L.float64), 2]),
                                        L.tensor([L.tensor(1, dtype=L.int32)]),
                                        L.tensor([L.tensor(1, dtype=L.float16), 2.0])), 0),
    ("tensor_range", lambda L, d: L.tensor([range(3), range(1, 4)], device=d), 0),
    ("tensor_ragged_scalar", lambda L, d: L.tensor([[1], 2]), 0),
    # a Python int is cast to a uint8 operand's dtype: -3 is 253
    ("u8_lt_neg", lambda L, d: (u8(L, d) < -3, u8(L, d) >= -3, -3 > u8(L, d)), 0),
    ("u8_floordiv_neg", lambda L, d: (u8(L, d) // -3, u8(L, d) % -3, L.fmod(u8(L, d), -3)), 0),
    # a short list holding sequences, tensors or slices is a tuple of indices (with PyTorch's warning)
    ("index_list_of_lists", lambda L, d: grid(L, d)[[[0, 2], [3, 1]]], 0),
    ("index_list_of_tensors", lambda L, d: grid(L, d)[[L.tensor([0, 2]), L.tensor([3, 1])]], 0),
    ("index_list_with_slice", lambda L, d: grid(L, d)[[1, slice(None, 2)]], 0),
    ("index_range", lambda L, d: grid(L, d)[range(3), [1, 2, 0]], 0),
    ("index_list_of_ints", lambda L, d: grid(L, d)[[2, 0]], 0),
    ("setitem_list_of_lists", setitem([[0, 2], [3, 1]], -1), 0),
    ("setitem_range", setitem(lambda L, d: (range(2), [1, 3]), -5), 0),
    # reductions: dim=() reduces every dim but in all/any; empty reductions' exception types
    ("all_any_no_dims", lambda L, d: (L.all(labels(L, d), ()), labels(L, d).any(dim=[])), 0),
    ("count_nonzero_no_dims", lambda L, d: L.count_nonzero(labels(L, d), ()), 0),
    ("norm_no_dims", lambda L, d: L.norm(labels(L, d).float(), dim=()), 1e-6),
    ("aminmax_empty_dim", lambda L, d: L.aminmax(L.zeros(2, 0, device=d), dim=1), 0),
    ("aminmax_empty", lambda L, d: L.aminmax(L.zeros(2, 0, device=d)), 0),
    ("cat_empty_list", lambda L, d: L.cat([]), 0),
]


def outcome(call, L, device):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = call(L, "cpu" if L is torch else device)
    except Exception as e:  # noqa: BLE001 -- the exception is the result compared
        return type(e)
    return flatten(r)


def flatten(r):
    if isinstance(r, tuple):
        return [v for x in r for v in flatten(x)]
    if isinstance(r, (bool, int, float)):
        return [(type(r).__name__, (), np.array(r))]
    return [(str(r.dtype).split(".")[-1], tuple(r.shape), np.asarray(r.detach().cpu().numpy(), np.float64))]


@pytest.mark.parametrize("name,call,atol", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, call, atol, device):
    want, got = outcome(call, torch, device), outcome(call, vkt, device)
    if isinstance(want, type):
        assert got is want, f"{name}: torch raises {want.__name__}, vkt gives {got}"
        return
    assert not isinstance(got, type), f"{name}: vkt raises {got.__name__}"
    assert [(w[0], w[1]) for w in want] == [(g[0], g[1]) for g in got]
    for (_, _, w), (_, _, g) in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=0, atol=atol)


def test_list_key_warns(device):
    x = vkt.arange(12, device=device).reshape(3, 4)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        x[[[0, 1], [2, 3]]]


EMPTY_REDUCTIONS = [  # max/min/amax/amin/argmax/argmin over no elements: which dim, and PyTorch's wording for each
    lambda L, d: L.amax(L.zeros(0, device=d)),
    lambda L, d: L.amin(L.zeros(2, 0, device=d)),
    lambda L, d: L.amax(L.zeros(0, device=d), dim=()),
    lambda L, d: L.amax(L.zeros(0, device=d), dim=0),
    lambda L, d: L.zeros(0, device=d).max(),
    lambda L, d: L.zeros(0, device=d).max(0),
    lambda L, d: L.argmax(L.zeros(0, device=d)),
    lambda L, d: L.argmin(L.zeros(2, 0, device=d)),
    lambda L, d: L.zeros(2, 0, device=d).argmax(1),
    lambda L, d: L.zeros(0, device=d).aminmax(),
]


@pytest.mark.parametrize("call", EMPTY_REDUCTIONS)
def test_empty_reduction_errors(call, device):
    def raised(L, d):
        try:
            call(L, d)
        except Exception as e:  # noqa: BLE001 -- the exception is the result compared
            return type(e).__name__, str(e)
        return None
    assert raised(vkt, device) == raised(torch, "cpu")


EMPTY_NORMS = [  # a norm without an identity (ord negative or infinite) over no elements, with and without dim
    lambda L, d: L.linalg.vector_norm(L.zeros(0, device=d), -1),
    lambda L, d: L.linalg.vector_norm(L.zeros(2, 0, device=d), -0.5),
    lambda L, d: L.linalg.vector_norm(L.zeros(2, 0, device=d), float("inf"), dim=1),
    lambda L, d: L.linalg.vector_norm(L.zeros(2, 0, device=d), -2, dim=(1, 0)),
    lambda L, d: L.linalg.vector_norm(L.zeros(2, 0, device=d), -1, dim=0),
    lambda L, d: L.linalg.vector_norm(L.zeros(2, 0, device=d), 0, dim=1),
    lambda L, d: L.norm(L.zeros(0, device=d), -1),
]


@pytest.mark.parametrize("call", EMPTY_NORMS)
def test_empty_norms(call, device):
    def result(L, d):
        try:
            return call(L, d).tolist()
        except Exception as e:  # noqa: BLE001 -- the exception is the result compared
            return type(e).__name__, str(e).replace("1because", "1 because")  # torch's message lacks the space
    assert result(vkt, device) == result(torch, "cpu")
