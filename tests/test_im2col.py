"""im2col and col2im (shaders/im2col.comp), which the convolutions, unfold and fold are built on: values, dtypes,
gradients, node names and errors against torch 2.13, over 1-3 spatial dims, strides, padding and dilation."""
import numpy as np
import pytest
import torch

import vkt
from conftest import raised

rng = np.random.default_rng(7)

# (input shape, kernel, stride, padding, dilation)
GEOMETRIES = [
    ((2, 3, 7, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 2, 8, 5), (2, 3), (2, 1), (0, 2), (1, 2)),
    ((2, 1, 6, 6), (3, 2), (3, 2), (1, 0), (2, 1)),
    ((3, 2, 4, 4), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((1, 4, 5, 7), (5, 7), (1, 1), (2, 3), (1, 1)),
    ((1, 2, 40, 37), (3, 3), (1, 1), (1, 1), (1, 1)),  # rows longer than a workgroup's 1024 elements
]


def pair(shape, dtype=np.float64, scale=1.0):
    a = (rng.standard_normal(shape) * scale).astype(dtype)
    return a, torch.tensor(a)


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation", GEOMETRIES)
def test_unfold_fold_match_torch(device, shape, kernel, stride, padding, dilation):
    a, t = pair(shape)
    x = vkt.tensor(a, device=device, requires_grad=True)
    tx = t.clone().requires_grad_()
    cols = vkt.nn.functional.unfold(x, kernel, dilation, padding, stride)
    tcols = torch.nn.functional.unfold(tx, kernel, dilation, padding, stride)
    np.testing.assert_array_equal(cols.detach().cpu().numpy(), tcols.detach().numpy())
    assert cols.grad_fn.name() == tcols.grad_fn.name() == "Im2ColBackward0"
    g, tg = pair(tuple(tcols.shape))
    cols.backward(vkt.tensor(g, device=device))
    tcols.backward(tg)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)

    c = vkt.tensor(g, device=device, requires_grad=True)
    tc = tg.clone().requires_grad_()
    img = vkt.nn.functional.fold(c, shape[2:], kernel, dilation, padding, stride)
    timg = torch.nn.functional.fold(tc, shape[2:], kernel, dilation, padding, stride)
    np.testing.assert_allclose(img.detach().cpu().numpy(), timg.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert img.grad_fn.name() == timg.grad_fn.name() == "Col2ImBackward0"
    img.backward(vkt.tensor(a, device=device))
    timg.backward(t)
    np.testing.assert_array_equal(c.grad.cpu().numpy(), tc.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.int32])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_dtypes_and_dims(device, dtype, nd):
    """Integer convolutions take the same columns (torch computes them exactly); float16 sums in float32."""
    shape = (2, 3) + (6, 5, 4)[:nd]
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    w = (rng.standard_normal((4, 3) + (3, 2, 2)[:nd]) * 4).astype(dtype)
    conv = getattr(vkt.nn.functional, f"conv{nd}d")
    got = conv(vkt.tensor(a, device=device), vkt.tensor(w, device=device), stride=2, padding=1, dilation=1)
    want = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(a).double(), torch.tensor(w).double(),
                                                       stride=2, padding=1)
    assert str(got.dtype) == f"vkt.{np.dtype(dtype).name}"
    tol = 0.05 * np.abs(want.numpy()).max() if dtype == np.float16 else 1e-4
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), want.numpy(), atol=tol)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_matches_torch(device, nd):
    a, t = pair((2, 4) + (5, 4, 3)[:nd])
    w, tw = pair((4, 3) + (3, 2, 3)[:nd])
    args = dict(stride=2, padding=1, output_padding=1, dilation=1)
    fn = f"conv_transpose{nd}d"
    x, wv = vkt.tensor(a, device=device, requires_grad=True), vkt.tensor(w, device=device, requires_grad=True)
    tx, twv = t.clone().requires_grad_(), tw.clone().requires_grad_()
    got, want = getattr(vkt.nn.functional, fn)(x, wv, **args), getattr(torch.nn.functional, fn)(tx, twv, **args)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-10)
    g, tg = pair(tuple(want.shape))
    got.backward(vkt.tensor(g, device=device))
    want.backward(tg)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wv.grad.cpu().numpy(), twv.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_float32_conv_takes_no_fallback(device):
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor(rng.standard_normal((2, 3, 9, 9)).astype(np.float32), device=device, requires_grad=True)
    w = vkt.tensor(rng.standard_normal((5, 3, 3, 3)).astype(np.float32), device=device, requires_grad=True)
    vkt.nn.functional.conv2d(x, w, padding=1, stride=2).sum().backward()
    vkt.nn.functional.fold(vkt.nn.functional.unfold(x, 2, padding=1), (9, 9), 2, padding=1).sum().backward()
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("fn,args", [
    ("unfold", lambda lib: (lib.ones((1, 2, 4, 4), dtype=lib.int64), 2)),
    ("fold", lambda lib: (lib.ones((1, 8, 9), dtype=lib.int32), (4, 4), 2)),
])
def test_integer_blocks_raise_as_torch(device, fn, args):
    want = raised(lambda: getattr(torch.nn.functional, fn)(*args(torch)))
    got = raised(lambda: getattr(vkt.nn.functional, fn)(*(a.to(device) if hasattr(a, "to") else a
                                                           for a in args(vkt))))
    assert got == want
