# Bad inputs: one table of (call, exception, message pattern), each run on cpu and vulkan tensors;
# after each error a vulkan tensor made before it must still read back right.
import numpy as np
import pytest

import vkt
from conftest import vulkan_default

NOT_VIEWABLE = "view size is not compatible|view|stride|contiguous"


def t23(d):
    return vkt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=d)


# (name, call taking a device string, expected exception, regex the message must contain or None)
CASES = [
    ("complex_array", lambda d: vkt.tensor(np.array([1 + 2j]), device=d), TypeError, "complex"),
    ("complex64_array", lambda d: vkt.tensor(np.zeros(3, np.complex64), device=d), TypeError, "complex"),
    ("complex_scalar", lambda d: vkt.tensor(1 + 2j, device=d), TypeError, "complex"),
    ("complex_in_list", lambda d: vkt.tensor([1.0, 2j], device=d), TypeError, "complex"),
    ("object_array", lambda d: vkt.tensor(np.array([1, "a"], dtype=object), device=d), TypeError, None),
    ("string_array", lambda d: vkt.tensor(np.array(["a", "b"]), device=d), TypeError, None),
    ("bytes_array", lambda d: vkt.tensor(np.array([b"a"]), device=d), TypeError, None),
    ("string", lambda d: vkt.tensor("abc", device=d), TypeError, None),
    ("string_in_list", lambda d: vkt.tensor([1, "a"], device=d), TypeError, None),
    ("from_numpy_complex", lambda d: vkt.from_numpy(np.zeros(2, np.complex128)), TypeError, "complex"),
    ("from_numpy_list", lambda d: vkt.from_numpy([1, 2]), TypeError, None),
    ("ragged", lambda d: vkt.tensor([[1, 2], [3]], device=d), ValueError, None),
    ("ragged_deep", lambda d: vkt.tensor([[[1], [2]], [[3]]], device=d), ValueError, None),
    ("ragged_scalar_and_list", lambda d: vkt.tensor([1, [2]], device=d), (ValueError, TypeError), None),
    ("device_cuda", lambda d: vkt.zeros(2, device="cuda"), RuntimeError, None),
    ("device_bad_index", lambda d: vkt.zeros(2, device="vulkan:x"), RuntimeError, None),
    ("device_negative_index", lambda d: vkt.zeros(2, device="vulkan:-1"), RuntimeError, None),
    ("device_index_99", lambda d: vkt.zeros(2, device="vulkan:99"), RuntimeError, None),
    ("device_tensor_cuda", lambda d: vkt.tensor([1.0], device="cuda"), RuntimeError, None),
    ("to_bad_device", lambda d: t23(d).to("vulkan:x"), RuntimeError, None),
    ("view_wrong_numel", lambda d: t23(d).view(4), RuntimeError, None),
    ("view_not_divisible", lambda d: t23(d).view(4, -1), RuntimeError, None),
    ("view_transposed", lambda d: t23(d).T.view(6), RuntimeError, NOT_VIEWABLE),
    ("view_sliced", lambda d: t23(d)[:, ::2].view(4), RuntimeError, None),
    ("view_two_minus1", lambda d: t23(d).view(-1, -1), RuntimeError, None),
    ("reshape_two_minus1", lambda d: t23(d).reshape(-1, -1), RuntimeError, None),
    ("reshape_wrong_numel", lambda d: t23(d).reshape(5), RuntimeError, None),
    ("reshape_negative", lambda d: t23(d).reshape(-2, 3), RuntimeError, None),
    ("transpose_bad_dim", lambda d: t23(d).transpose(0, 2), IndexError, None),
    ("transpose_bad_neg_dim", lambda d: t23(d).transpose(-3, 0), IndexError, None),
    ("squeeze_bad_dim", lambda d: t23(d).squeeze(2), IndexError, None),
    ("unsqueeze_bad_dim", lambda d: t23(d).unsqueeze(3), IndexError, None),
    ("unsqueeze_bad_neg_dim", lambda d: t23(d).unsqueeze(-4), IndexError, None),
    ("flatten_bad_dim", lambda d: t23(d).flatten(2), IndexError, None),
    ("flatten_start_after_end", lambda d: t23(d).flatten(1, 0), RuntimeError, None),
    ("permute_bad_dim", lambda d: t23(d).permute(0, 2), IndexError, None),
    ("permute_repeated", lambda d: t23(d).permute(0, 0), RuntimeError, None),
    ("permute_wrong_count", lambda d: t23(d).permute(0), RuntimeError, None),
    ("mT_1d", lambda d: vkt.zeros(3, device=d).mT, RuntimeError, None),
    ("index_row", lambda d: t23(d)[2], IndexError, None),
    ("index_col", lambda d: t23(d)[0, 3], IndexError, None),
    ("index_negative", lambda d: t23(d)[-3], IndexError, None),
    ("index_too_many", lambda d: t23(d)[0, 0, 0], IndexError, None),
    ("index_0d", lambda d: vkt.tensor(1.0, device=d)[0], IndexError, None),
    ("slice_negative_step", lambda d: t23(d)[::-1], ValueError, None),
    ("slice_negative_step_col", lambda d: t23(d)[:, ::-2], ValueError, None),
    ("slice_zero_step", lambda d: t23(d)[::0], ValueError, None),
    ("expand_incompatible", lambda d: t23(d).expand(4, 3), RuntimeError, None),
    ("expand_fewer_dims", lambda d: t23(d).expand(3), RuntimeError, None),
    ("expand_minus1_new_dim", lambda d: t23(d).expand(-1, 2, 3), RuntimeError, None),
    ("zeros_negative", lambda d: vkt.zeros(-1, device=d), RuntimeError, None),
    ("empty_negative", lambda d: vkt.empty(2, -3, device=d), RuntimeError, None),
    ("ones_negative_tuple", lambda d: vkt.ones((3, -1), device=d), RuntimeError, None),
    ("full_negative", lambda d: vkt.full((-2,), 1.0, device=d), RuntimeError, None),
    ("rand_negative", lambda d: vkt.rand(-5, device=d), RuntimeError, None),
    ("arange_zero_step", lambda d: vkt.arange(0, 5, 0, device=d), RuntimeError, None),
    ("arange_wrong_sign", lambda d: vkt.arange(0, 5, -1, device=d), RuntimeError, None),
    ("item_multi", lambda d: t23(d).item(), RuntimeError, None),
    ("item_empty", lambda d: vkt.zeros(0, device=d).item(), RuntimeError, None),
    ("dtype_numpy", lambda d: vkt.zeros(2, dtype=np.float32, device=d), TypeError, None),
    ("dtype_string", lambda d: vkt.zeros(2, dtype="float32", device=d), TypeError, None),
    ("dtype_int", lambda d: vkt.ones(2, dtype=3, device=d), TypeError, None),
    ("tensor_dtype_numpy", lambda d: vkt.tensor([1, 2], dtype=np.int64, device=d), TypeError, None),
    ("to_dtype_numpy", lambda d: t23(d).to(np.float64), TypeError, None),
    ("full_like_dtype_string", lambda d: vkt.full_like(t23(d), 1, dtype="int32"), TypeError, None),
]


@pytest.fixture
def sentinel():
    """A tensor made before the error: on vulkan when there is one (cpu otherwise, so the cpu half
    of the table still runs on a machine without Vulkan)."""
    d = "vulkan" if vkt.vulkan.is_available() else "cpu"
    ref = np.arange(1000, dtype=np.float32) * 0.25
    return vkt.tensor(ref, device=d), ref


@pytest.mark.parametrize("name,call,exc,match", CASES, ids=[c[0] for c in CASES])
def test_error(device, sentinel, name, call, exc, match):
    with pytest.raises(exc, match=match):
        call(device)
    t, ref = sentinel
    assert np.array_equal(np.asarray(t), ref)
    # The runtime still works after the error: a fresh tensor on the same device reads back.
    assert vkt.ones(3, device=device).tolist() == [1.0, 1.0, 1.0]


def test_numpy_on_vulkan_message(dev):
    with pytest.raises(TypeError) as info:
        vkt.zeros(2, device=dev).numpy()
    assert f"can't convert {vulkan_default()} device type tensor to numpy" in str(info.value)
    assert "Tensor.cpu()" in str(info.value)


def test_numpy_on_cpu_tensor_works():
    assert vkt.zeros(2).numpy().tolist() == [0.0, 0.0]
