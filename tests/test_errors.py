# Bad inputs: one table of (call, exception, message pattern), each run on cpu and vulkan tensors.
# Each raises the exception PyTorch raises, with a message naming the offending value; afterwards a
# tensor made before it still reads back right, the device still works, and memory_allocated() is
# back where it was. 182 bad inputs (CASES, counted by test_catalogue_size), each on both devices.
import gc

import numpy as np
import pytest

import vkt
from conftest import vulkan_default

NOT_VIEWABLE = "view size is not compatible|view|stride|contiguous"
F = vkt.nn.functional


def t23(d):
    return vkt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=d)


def other(d):
    """The device that is not d, for mixed-device cases (skipped without Vulkan)."""
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan device on this machine")
    return "cpu" if d == "vulkan" else "vulkan"


def only(d, want):
    """The device string, for cases that exist on one device only (a shader cannot raise)."""
    if d != want:
        pytest.skip(f"this bad input is only an error on the {want} device")
    return d


def i64(values, d):
    return vkt.tensor(values, dtype=vkt.int64, device=d)


def bools(*shape, d):
    return vkt.ones(*shape, dtype=vkt.bool, device=d)


MIXED = "at least two devices, (vulkan:0 and cpu|cpu and vulkan:0)!"
NOT_BROADCAST = r"size of tensor a \(2\) must match the size of tensor b \(4\)"
OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


# (name, call taking a device string, expected exception, regex the message must contain or None)
CASES = [
    ("complex_array", lambda d: vkt.tensor(np.array([1 + 2j]), device=d), TypeError, "complex"),
    ("complex64_array", lambda d: vkt.tensor(np.zeros(3, np.complex64), device=d), TypeError, "complex"),
    ("complex_scalar", lambda d: vkt.tensor(1 + 2j, device=d), TypeError, "complex"),
    ("complex_in_list", lambda d: vkt.tensor([1.0, 2j], device=d), TypeError, "complex"),
    ("object_array", lambda d: vkt.tensor(np.array([1, "a"], dtype=object), device=d), TypeError, 'object'),
    ("string_array", lambda d: vkt.tensor(np.array(["a", "b"]), device=d), TypeError, '<U1'),
    ("bytes_array", lambda d: vkt.tensor(np.array([b"a"]), device=d), TypeError, 'S1'),
    ("string", lambda d: vkt.tensor("abc", device=d), TypeError, 'str'),
    ("string_in_list", lambda d: vkt.tensor([1, "a"], device=d), TypeError, 'str'),
    ("from_numpy_complex", lambda d: vkt.from_numpy(np.zeros(2, np.complex128)), TypeError, "complex"),
    ("from_numpy_list", lambda d: vkt.from_numpy([1, 2]), TypeError, 'list'),
    ("ragged", lambda d: vkt.tensor([[1, 2], [3]], device=d), ValueError, 'length 2 at dim 1 \\(got 1\\)'),
    ("ragged_deep", lambda d: vkt.tensor([[[1], [2]], [[3]]], device=d), ValueError, 'length 2 at dim 1 \\(got 1\\)'),
    ("ragged_scalar_and_list", lambda d: vkt.tensor([1, [2]], device=d), (ValueError, TypeError), 'dim 1'),
    ("device_cuda", lambda d: vkt.zeros(2, device="cuda"), RuntimeError, 'cuda'),
    ("device_bad_index", lambda d: vkt.zeros(2, device="vulkan:x"), RuntimeError, 'vulkan:x'),
    ("device_negative_index", lambda d: vkt.zeros(2, device="vulkan:-1"), RuntimeError, 'vulkan:-1'),
    ("device_index_99", lambda d: vkt.zeros(2, device="vulkan:99"), RuntimeError, "vulkan:99|Vulkan is not available"),
    ("device_tensor_cuda", lambda d: vkt.tensor([1.0], device="cuda"), RuntimeError, 'cuda'),
    ("to_bad_device", lambda d: t23(d).to("vulkan:x"), RuntimeError, 'vulkan:x'),
    ("view_wrong_numel", lambda d: t23(d).view(4), RuntimeError, '\\[4\\].*size 6'),
    ("view_not_divisible", lambda d: t23(d).view(4, -1), RuntimeError, '\\[4, -1\\].*size 6'),
    ("view_transposed", lambda d: t23(d).T.view(6), RuntimeError, NOT_VIEWABLE),
    ("view_sliced", lambda d: t23(d)[:, ::2].view(4), RuntimeError, 'view size is not compatible'),
    ("view_two_minus1", lambda d: t23(d).view(-1, -1), RuntimeError, 'only one dimension can be inferred'),
    ("reshape_two_minus1", lambda d: t23(d).reshape(-1, -1), RuntimeError, 'only one dimension can be inferred'),
    ("reshape_wrong_numel", lambda d: t23(d).reshape(5), RuntimeError, '\\[5\\].*size 6'),
    ("reshape_negative", lambda d: t23(d).reshape(-2, 3), RuntimeError, '-2'),
    ("transpose_bad_dim", lambda d: t23(d).transpose(0, 2), IndexError, 'got 2'),
    ("transpose_bad_neg_dim", lambda d: t23(d).transpose(-3, 0), IndexError, 'got -3'),
    ("squeeze_bad_dim", lambda d: t23(d).squeeze(2), IndexError, 'got 2'),
    ("unsqueeze_bad_dim", lambda d: t23(d).unsqueeze(3), IndexError, 'got 3'),
    ("unsqueeze_bad_neg_dim", lambda d: t23(d).unsqueeze(-4), IndexError, 'got -4'),
    ("flatten_bad_dim", lambda d: t23(d).flatten(2), IndexError, 'got 2'),
    ("flatten_start_after_end", lambda d: t23(d).flatten(1, 0), RuntimeError, 'start_dim cannot come after end_dim'),
    ("permute_bad_dim", lambda d: t23(d).permute(0, 2), IndexError, 'got 2'),
    ("permute_repeated", lambda d: t23(d).permute(0, 0), RuntimeError, 'duplicate dims'),
    ("permute_wrong_count", lambda d: t23(d).permute(0), RuntimeError, 'input.dim\\(\\) = 2'),
    ("mT_1d", lambda d: vkt.zeros(3, device=d).mT, RuntimeError, '1-D'),
    ("index_row", lambda d: t23(d)[2], IndexError, 'index 2 .* size 2'),
    ("index_col", lambda d: t23(d)[0, 3], IndexError, 'index 3 .* size 3'),
    ("index_negative", lambda d: t23(d)[-3], IndexError, 'index -3'),
    ("index_too_many", lambda d: t23(d)[0, 0, 0], IndexError, 'dimension 2'),
    ("index_0d", lambda d: vkt.tensor(1.0, device=d)[0], IndexError, 'dimension 0'),
    ("slice_negative_step", lambda d: t23(d)[::-1], ValueError, 'step must be greater than zero'),
    ("slice_negative_step_col", lambda d: t23(d)[:, ::-2], ValueError, 'step must be greater than zero'),
    ("slice_zero_step", lambda d: t23(d)[::0], ValueError, 'step cannot be zero'),
    ("expand_incompatible", lambda d: t23(d).expand(4, 3), RuntimeError, '\\(4\\).*\\(2\\)'),
    ("expand_fewer_dims", lambda d: t23(d).expand(3), RuntimeError, '\\(1\\)'),
    ("expand_minus1_new_dim", lambda d: t23(d).expand(-1, 2, 3), RuntimeError, '\\(-1\\)'),
    ("zeros_negative", lambda d: vkt.zeros(-1, device=d), RuntimeError, '-1'),
    ("empty_negative", lambda d: vkt.empty(2, -3, device=d), RuntimeError, '-3'),
    ("ones_negative_tuple", lambda d: vkt.ones((3, -1), device=d), RuntimeError, '-1'),
    ("full_negative", lambda d: vkt.full((-2,), 1.0, device=d), RuntimeError, '-2'),
    ("rand_negative", lambda d: vkt.rand(-5, device=d), RuntimeError, '-5'),
    ("arange_zero_step", lambda d: vkt.arange(0, 5, 0, device=d), RuntimeError, 'step must be nonzero'),
    ("arange_wrong_sign", lambda d: vkt.arange(0, 5, -1, device=d), RuntimeError, 'inconsistent with step sign'),
    ("item_multi", lambda d: t23(d).item(), RuntimeError, '6 elements'),
    ("item_empty", lambda d: vkt.zeros(0, device=d).item(), RuntimeError, '0 elements'),
    ("dtype_numpy", lambda d: vkt.zeros(2, dtype=np.float32, device=d), TypeError, 'numpy.float32'),
    ("dtype_string", lambda d: vkt.zeros(2, dtype="float32", device=d), TypeError, "'float32'"),
    ("dtype_int", lambda d: vkt.ones(2, dtype=3, device=d), TypeError, 'not 3'),
    ("tensor_dtype_numpy", lambda d: vkt.tensor([1, 2], dtype=np.int64, device=d), TypeError, 'numpy.int64'),
    ("to_dtype_numpy", lambda d: t23(d).to(np.float64), TypeError, 'numpy.float64'),
    ("full_like_dtype_string", lambda d: vkt.full_like(t23(d), 1, dtype="int32"), TypeError, "'int32'"),
    # elementwise
    ("add_shapes", lambda d: t23(d) + vkt.ones(4, 5, device=d), RuntimeError, NOT_BROADCAST),
    ("mul_shapes", lambda d: t23(d) * vkt.ones(3, 2, device=d), RuntimeError, r"\[2, 3\] and \[3, 2\]"),
    ("pow_shapes", lambda d: t23(d) ** vkt.ones(4, 5, device=d), RuntimeError, NOT_BROADCAST),
    ("where_shapes", lambda d: vkt.where(bools(4, d=d), t23(d), t23(d)), RuntimeError, r"\[4\] and \[2, 3\]"),
    ("where_float_condition", lambda d: vkt.where(vkt.ones(2, 3, device=d), t23(d), t23(d)), RuntimeError, "float32"),
    ("add_mixed_devices", lambda d: t23(d) + vkt.ones(3, device=other(d)), RuntimeError, MIXED),
    ("where_mixed_devices", lambda d: vkt.where(bools(2, 3, d=d), t23(d), t23(other(d))), RuntimeError, MIXED),
    ("add_string", lambda d: t23(d) + "x", TypeError, "str"),
    ("neg_bool", lambda d: -bools(3, d=d), RuntimeError, "bool tensor"),
    ("int_negative_power", lambda d: i64([1, 2], d) ** -1, RuntimeError, "negative integer powers"),
    ("gelu_bad_approximate", lambda d: F.gelu(t23(d), approximate="foo"), ValueError, "'foo'"),
    ("iadd_broadcast_view", lambda d: vkt.ones(3, device=d).expand(2, 3).add_(t23(d)), RuntimeError, OVERLAP),
    ("imul_broadcast_view", lambda d: vkt.ones(3, device=d).expand(2, 3).mul_(2.0), RuntimeError, OVERLAP),
    ("relu__broadcast_view", lambda d: vkt.ones(3, device=d).expand(2, 3).relu_(), RuntimeError, OVERLAP),
    ("copy__broadcast_view", lambda d: vkt.ones(3, device=d).expand(2, 3).copy_(t23(d)), RuntimeError, OVERLAP),
    ("iadd_grows_output", lambda d: vkt.ones(3, device=d).__iadd__(t23(d)), RuntimeError,
     r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
    ("iadd_float_into_int", lambda d: i64([1, 2, 3], d).__iadd__(vkt.ones(3, device=d)), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    # reductions
    ("sum_bad_dim", lambda d: t23(d).sum(2), IndexError, "got 2"),
    ("sum_bad_neg_dim", lambda d: t23(d).sum(-3), IndexError, "got -3"),
    ("sum_repeated_dim", lambda d: t23(d).sum((0, 0)), RuntimeError, "dim 0 appears multiple times"),
    ("mean_int", lambda d: i64([1, 2], d).mean(), RuntimeError, "Long"),
    ("mean_int_dtype", lambda d: t23(d).mean(dtype=vkt.int32), RuntimeError, "Int"),
    ("var_int", lambda d: i64([1, 2], d).var(), RuntimeError, "^std and var only support floating point and complex "
     "dtypes$"),
    ("max_empty", lambda d: vkt.ones(0, device=d).max(), RuntimeError, r"numel\(\) == 0"),
    ("argmax_empty", lambda d: vkt.ones(0, device=d).argmax(), IndexError, r"numel\(\) == 0"),
    ("max_empty_dim", lambda d: vkt.ones(0, 3, device=d).max(0), IndexError, "dim 0 to have non-zero size"),
    ("amax_empty_dim", lambda d: vkt.ones(0, 3, device=d).amax(0), IndexError, "dim 0 to have non-zero size"),
    ("max_bad_dim", lambda d: t23(d).max(dim=5), IndexError, "got 5"),
    ("softmax_bad_dim", lambda d: F.softmax(t23(d), 3), IndexError, "got 3"),
    ("log_softmax_bad_dim", lambda d: F.log_softmax(t23(d), -5), IndexError, "got -5"),
    ("softmax_int", lambda d: F.softmax(i64([1, 2], d), 0), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("softmax_no_dim", lambda d: vkt.softmax(t23(d)), TypeError, "dim"),
    # matmul family
    ("matmul_inner", lambda d: t23(d) @ t23(d), RuntimeError, r"\(2x3 and 2x3\)"),
    ("matmul_1d_lengths", lambda d: vkt.ones(3, device=d) @ vkt.ones(4, device=d), RuntimeError,
     r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
    ("matmul_0d", lambda d: vkt.tensor(1.0, device=d) @ t23(d), RuntimeError, "0D and 2D"),
    ("matmul_dtypes", lambda d: t23(d) @ vkt.ones(3, 2, dtype=vkt.float64, device=d), RuntimeError, "float != double"),
    ("matmul_bool", lambda d: bools(2, 2, d=d) @ bools(2, 2, d=d), RuntimeError, "Bool"),
    ("matmul_mixed_devices", lambda d: t23(d) @ vkt.ones(3, 2, device=other(d)), RuntimeError, MIXED),
    ("mm_3d", lambda d: vkt.mm(vkt.ones(2, 2, 2, device=d), t23(d)), RuntimeError, "^self must be a matrix$"),
    ("mm_inner", lambda d: vkt.mm(t23(d), t23(d)), RuntimeError, r"\(2x3 and 2x3\)"),
    ("bmm_2d", lambda d: vkt.bmm(t23(d), t23(d)), RuntimeError, "2-D"),
    ("bmm_batch", lambda d: vkt.bmm(vkt.ones(2, 2, 3, device=d), vkt.ones(3, 3, 2, device=d)), RuntimeError,
     r"batch2 tensor to be: \[2, 3\] but got: \[3, 3\]\."),
    ("bmm_dtypes", lambda d: vkt.bmm(vkt.ones(1, 2, 2, device=d), vkt.ones(1, 2, 2, dtype=vkt.float64, device=d)),
     RuntimeError, "expected scalar type Float but found Double"),
    ("baddbmm_input_dtype", lambda d: vkt.baddbmm(vkt.ones(1, 2, 2, dtype=vkt.float64, device=d),
                                                  vkt.ones(1, 2, 3, device=d), vkt.ones(1, 3, 2, device=d)),
     RuntimeError, "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    ("baddbmm_batch2_dtype", lambda d: vkt.baddbmm(vkt.ones(1, 2, 2, device=d), vkt.ones(1, 2, 3, device=d),
                                                   vkt.ones(1, 3, 2, dtype=vkt.int64, device=d)),
     RuntimeError, "expected scalar type Float but found Long"),
    ("mv_dtypes", lambda d: vkt.mv(t23(d), vkt.ones(3, dtype=vkt.float64, device=d)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ("addmv_dtypes", lambda d: t23(d)[0].addmv_(t23(d).T, vkt.ones(2, dtype=vkt.float64, device=d)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Float, Float, and Double"),
    ("bilinear_batch", lambda d: F.bilinear(t23(d), vkt.ones(3, 2, device=d), vkt.ones(4, 3, 2, device=d)),
     RuntimeError, r"bilinear\(\): input batch dimensions do not match at dim 0: got 2 and 3"),
    ("linear_weight", lambda d: F.linear(t23(d), vkt.ones(4, 4, device=d)), RuntimeError, r"\(2x3 and 4x4\)"),
    ("linear_bias", lambda d: F.linear(t23(d), vkt.ones(4, 3, device=d), vkt.ones(5, device=d)), RuntimeError,
     r"\(5\)"),
    ("matmul_add_relu_bias", lambda d: vkt.matmul_add_relu(t23(d), vkt.ones(3, 4, device=d), vkt.ones(5, device=d)),
     RuntimeError, r"\(5\)"),
    ("matmul_add_relu_inner", lambda d: vkt.matmul_add_relu(t23(d), vkt.ones(4, 4, device=d), vkt.ones(4, device=d)),
     RuntimeError, r"\(2x3 and 4x4\)"),
    ("matmul_add_relu_dtype",
     lambda d: vkt.matmul_add_relu(t23(d), vkt.ones(3, 4, device=d), vkt.ones(4, dtype=vkt.int32, device=d)),
     RuntimeError, "int != float"),
    # shape ops
    ("cat_sizes", lambda d: vkt.cat([t23(d), vkt.ones(2, 4, device=d)]), RuntimeError,
     "Expected size 3 but got size 4"),
    ("cat_empty_list", lambda d: vkt.cat([]), ValueError, "non-empty"),
    ("cat_bad_dim", lambda d: vkt.cat([t23(d), t23(d)], dim=2), IndexError, "got 2"),
    ("cat_0d", lambda d: vkt.cat([vkt.tensor(1.0, device=d), vkt.tensor(2.0, device=d)]), RuntimeError, "position 1"),
    ("cat_ndims", lambda d: vkt.cat([t23(d), vkt.ones(3, device=d)]), RuntimeError, "got 2 and 1"),
    ("cat_mixed_devices", lambda d: vkt.cat([t23(d), t23(other(d))]), RuntimeError, MIXED),
    ("stack_sizes", lambda d: vkt.stack([t23(d), vkt.ones(4, 5, device=d)]), RuntimeError,
     r"\[2, 3\] at entry 0 and \[4, 5\] at entry 1"),
    ("stack_empty_list", lambda d: vkt.stack([]), RuntimeError, "non-empty"),
    ("stack_bad_dim", lambda d: vkt.stack([t23(d), t23(d)], dim=4), IndexError, "got 4"),
    ("gather_float_index", lambda d: vkt.gather(t23(d), 1, vkt.ones(2, 3, device=d)), RuntimeError, "int32/int64"),
    ("gather_bad_dim", lambda d: vkt.gather(t23(d), 2, i64([[0]], d)), IndexError, "got 2"),
    ("gather_index_ndim", lambda d: vkt.gather(t23(d), 0, i64([0], d)), RuntimeError, "same number of dimensions"),
    ("gather_out_of_range", lambda d: vkt.gather(t23(d), 1, i64([[5]], d)), RuntimeError, "index 5 is out of bounds"),
    ("gather_negative", lambda d: vkt.gather(t23(d), 1, i64([[-1]], d)), RuntimeError, "index -1 is out of bounds"),
    ("index_select_2d_index", lambda d: vkt.index_select(t23(d), 0, i64([[0]], d)), IndexError, "vector"),
    ("index_select_float_index", lambda d: vkt.index_select(t23(d), 0, vkt.ones(1, device=d)), RuntimeError, "float32"),
    ("index_select_bad_dim", lambda d: vkt.index_select(t23(d), 2, i64([0], d)), IndexError, "got 2"),
    ("index_select_out_of_range", lambda d: vkt.index_select(t23(d), 0, i64([7], d)), IndexError,
     "index out of range in self"),
    ("getitem_float_tensor", lambda d: t23(d)[vkt.ones(1, device=d)], IndexError, "long, int, byte or bool"),
    ("getitem_mask_shape", lambda d: t23(d)[bools(5, d=d)], IndexError, r"mask \[5\]"),
    ("getitem_float", lambda d: t23(d)[1.5], IndexError, "only integers"),
    ("tril_1d", lambda d: vkt.tril(vkt.ones(3, device=d)), RuntimeError, "at least 2 dimensions"),
    ("tril_float_diagonal", lambda d: vkt.tril(t23(d), 1.5), TypeError, "float"),
    ("masked_fill_float_mask", lambda d: t23(d).masked_fill(vkt.ones(2, 3, device=d), 0.0), RuntimeError, "float32"),
    ("masked_fill_mask_shape", lambda d: t23(d).masked_fill(bools(4, d=d), 0.0), RuntimeError, r"\[4\] and \[2, 3\]"),
    ("masked_fill_value_1d", lambda d: t23(d).masked_fill(bools(2, 3, d=d), vkt.ones(2, device=d)), RuntimeError,
     "1 dimension"),
    ("masked_fill__grows", lambda d: vkt.ones(3, device=d).masked_fill_(bools(2, 3, d=d), 1.0), RuntimeError,
     r"output with shape \[3\]"),
    ("setitem_shape", lambda d: t23(d).__setitem__(0, vkt.ones(4, device=d)), RuntimeError,
     r"shape \[4\] cannot be broadcast to indexing result of shape \[3\]"),
    ("setitem_out_of_range", lambda d: t23(d).__setitem__(5, 1.0), IndexError, "index 5"),
    ("setitem_float_index", lambda d: t23(d).__setitem__(1.5, 0.0), IndexError, "only integers"),
    ("split_zero", lambda d: t23(d).split(0), RuntimeError, "dimension size of 2"),
    ("chunk_zero", lambda d: t23(d).chunk(0), RuntimeError, "got: 0"),
    ("flip_bad_dim", lambda d: t23(d).flip(3), IndexError, "got 3"),
    ("flip_repeated_dim", lambda d: t23(d).flip((0, 0)), RuntimeError, "dim 0 appears multiple times"),
    ("roll_bad_dim", lambda d: t23(d).roll(1, 5), IndexError, "got 5"),
    # sizes, dtypes, scalars
    ("empty_bytes_overflow", lambda d: vkt.empty(2**62, 2**62, device=d), RuntimeError, "overflows"),
    ("float64_bytes_overflow", lambda d: vkt.empty(2**61, dtype=vkt.float64, device=d), RuntimeError,
     r"\[2305843009213693952\].*float64.*overflows"),
    ("full_bytes_overflow", lambda d: vkt.full((2**62, 4), 1.0, device=d), RuntimeError, "overflows"),
    ("zeros_too_large", lambda d: vkt.zeros(2**40, device=only(d, "vulkan")), vkt.OutOfMemoryError,
     "tried to allocate 4398046511104 bytes"),
    ("reshape_huge", lambda d: t23(d).reshape(2**62, 4), RuntimeError, r"\[4611686018427387904, 4\].*size 6"),
    ("reshape_empty_wraps", lambda d: vkt.zeros(0, device=d).reshape(2**62, 4), RuntimeError,
     r"\[4611686018427387904, 4\].*size 0"),
    ("view_empty_wraps", lambda d: vkt.zeros(0, device=d).view(2**62, 4, -1), RuntimeError, "size 0"),
    ("reshape_minus3", lambda d: t23(d).reshape(-3, 2), RuntimeError, "-3"),
    ("expand_negative", lambda d: t23(d).expand(2, -2), RuntimeError, r"\(-2\)"),
    ("int_too_large", lambda d: vkt.tensor([2**70], device=d), ValueError, "^Overflow when unpacking long long$"),
    ("int_past_uint64", lambda d: vkt.zeros(2, device=d) + 2**64, OverflowError, "^int too big to convert$"),
    ("index_put_dtype", lambda d: t23(d).index_put_((i64([0], d),), vkt.ones(3, dtype=vkt.float64, device=d)),
     RuntimeError, r"^Index put requires the source and destination dtypes match, got Float for the destination "
     r"and Double for the source\.$"),
    ("clamp_inplace_cast", lambda d: i64([1, 2], d).clamp_(0.5), RuntimeError,
     "^result type Float can't be cast to the desired output type long int$"),
    ("where_number_overflow", lambda d: vkt.where(bools(3, d=d), vkt.zeros(3, dtype=vkt.uint8, device=d), 300),
     RuntimeError, "^value cannot be converted to type uint8_t without overflow$"),
    ("constructor_float", lambda d: vkt.Tensor(2.5), TypeError, r"^new\(\): data must be a sequence \(got float\)$"),
    ("uint16_array", lambda d: vkt.tensor(np.zeros(2, np.uint16), device=d), TypeError, "'H'"),
    ("int8_array", lambda d: vkt.tensor(np.zeros(2, np.int8), device=d), TypeError, "'b'"),
    ("datetime_array", lambda d: vkt.tensor(np.zeros(2, "datetime64[s]"), device=d), TypeError, "datetime64"),
    ("rand_int", lambda d: vkt.rand(3, dtype=vkt.int32, device=d), NotImplementedError,
     "^\"check_uniform_bounds\" not implemented for 'Int'$"),
    ("randn_int", lambda d: vkt.randn(3, dtype=vkt.int64, device=d), NotImplementedError,
     "^\"normal_kernel_cpu\" not implemented for 'Long'$"),
    ("rand_like_bool", lambda d: vkt.rand_like(vkt.zeros(2, dtype=vkt.bool, device=d)), NotImplementedError,
     "'Bool'"),
    ("device_gpu", lambda d: vkt.zeros(2, device="gpu"), RuntimeError, "gpu"),
    ("device_float", lambda d: vkt.zeros(2, device=3.5), TypeError, "3.5"),
    ("to_vulkan_99", lambda d: t23(d).to("vulkan:99"), RuntimeError, "vulkan:99|Vulkan is not available"),
    ("bool_of_many", lambda d: bool(t23(d)), RuntimeError, "more than one value"),
    ("int_of_many", lambda d: int(t23(d)), ValueError, "only one element tensors can be converted to Python scalars"),
    ("float_of_empty", lambda d: float(vkt.zeros(0, device=d)), ValueError, "only one element tensors"),
    ("index_of_many", lambda d: [1, 2][vkt.zeros(2, dtype=vkt.int64, device=d)], TypeError,
     "only integer tensors of a single element can be converted to an index"),
    ("len_0d", lambda d: len(vkt.tensor(1.0, device=d)), TypeError, "0-d"),
]


@pytest.fixture
def sentinel():
    """A tensor made before the error: on vulkan when there is one (cpu otherwise, so the cpu half
    of the table still runs on a machine without Vulkan)."""
    d = "vulkan" if vkt.vulkan.is_available() else "cpu"
    ref = np.arange(1000, dtype=np.float32) * 0.25
    return vkt.tensor(ref, device=d), ref


def allocated():
    return vkt.vulkan.memory_allocated() if vkt.vulkan.is_available() else 0


def test_catalogue_size():
    assert len(CASES) == 182
    assert len({c[0] for c in CASES}) == len(CASES), "case names repeat"
    assert all(c[3] for c in CASES), "every case names what its message must say"


@pytest.mark.parametrize("name,call,exc,match", CASES, ids=[c[0] for c in CASES])
def test_error(device, sentinel, name, call, exc, match):
    gc.collect()  # an earlier test's tensors caught in reference cycles must not be freed mid-test
    before = allocated()
    with pytest.raises(exc, match=match) as info:
        call(device)
    del info  # its traceback would keep the call's temporaries alive
    assert allocated() == before, "a failed call kept device memory"
    t, ref = sentinel
    assert np.array_equal(np.asarray(t), ref)
    # The runtime still works after the error: a fresh tensor on the same device reads back.
    assert vkt.ones(3, device=device).tolist() == [1.0, 1.0, 1.0]
    assert (t + 1).cpu().numpy()[3] == ref[3] + 1


def test_numpy_on_vulkan_message(dev):
    with pytest.raises(TypeError) as info:
        vkt.zeros(2, device=dev).numpy()
    assert f"can't convert {vulkan_default()} device type tensor to numpy" in str(info.value)
    assert "Tensor.cpu()" in str(info.value)


def test_numpy_on_cpu_tensor_works():
    assert vkt.zeros(2).numpy().tolist() == [0.0, 0.0]


# ---- inputs that are not errors in PyTorch but must not crash and must give a defined value ----

NONFINITE = [float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 3e9, 2147483520.0, -2147483648.0, 300.0,
             -1.0, 2.9, -2.9]


@pytest.mark.parametrize("src", ["float32", "float64"])
def test_nonfinite_float_to_int_is_defined(device, src):
    """PyTorch casts NaN/inf/out-of-range floats to integers without an error; the result is whatever
    the CPU's conversion gives (x86: the most negative integer). vkt defines it on every device:
    NaN, inf and values outside the integer's range become its most negative value; uint8 takes
    the low byte of the int32 conversion (so 300 -> 44, -1 -> 255, NaN -> 0); others truncate."""
    t = vkt.tensor(np.array(NONFINITE, dtype=src), device=device)
    imin32, imin64 = -(2**31), -(2**63)
    want32 = [imin32] * 6 + [2147483520, imin32, 300, -1, 2, -2]
    want64 = [imin64] * 5 + [3000000000, 2147483520, imin32, 300, -1, 2, -2]
    assert t.to(vkt.int32).tolist() == want32
    assert t.to(vkt.int64).tolist() == want64
    assert t.to(vkt.uint8).tolist() == [v & 0xFF for v in want32]
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int32 without overflow$"):
        vkt.tensor([float("nan")], dtype=vkt.int32, device=device)  # data is checked too, as PyTorch's
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        vkt.full((2,), float("inf"), dtype=vkt.int64, device=device)  # a fill checks its number, as PyTorch's


def test_tensors_survive_empty_cache(device):
    if device == "vulkan":
        before = vkt.vulkan.memory_allocated()
    a = vkt.tensor(np.arange(1000, dtype=np.float32), device=device)
    b = (a * 2).sum()  # recorded, maybe not yet run
    dropped = a + 1
    del dropped
    if vkt.vulkan.is_available():
        vkt.vulkan.empty_cache()
    assert b.item() == 999000.0
    assert np.array_equal(np.asarray((a + 1).cpu()), np.arange(1000, dtype=np.float32) + 1)
    if device == "vulkan":
        vkt.vulkan.empty_cache()
        assert vkt.vulkan.memory_reserved() > 0  # a's block stays
        del a, b
        assert vkt.vulkan.memory_allocated() == before
        vkt.vulkan.empty_cache()
        assert vkt.ones(2, device=device).tolist() == [1.0, 1.0]
