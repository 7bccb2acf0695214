# unique(dim=) and unique_consecutive(dim=) against torch on the CPU (values, inverse, counts, dtypes and errors)
# over every dtype, dims, layouts and empty shapes, with no CPU fallback on vulkan; and topk(sorted=False), whose
# order PyTorch leaves unspecified: vkt returns it sorted, so the tests compare the selected sets.
import numpy as np
import pytest

import vkt

from conftest import DTYPES

torch = pytest.importorskip("torch")

CASES = [((6, 3), 0), ((6, 3), 1), ((5, 3, 2), 1), ((4, 3, 2), -1), ((4, 3, 2), 0), ((7,), 0), ((1, 1), 0),
         ((0, 3), 0), ((3, 0, 2), 1), ((9, 2), 0)]


def same(got, want, what):
    assert got.shape == tuple(want.shape), f"{what}: shape {got.shape} != {tuple(want.shape)}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], f"{what}: dtype {got.dtype}"
    assert np.array_equal(got.cpu().numpy(), want.numpy()), f"{what}: {got} != {want}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("consecutive", [False, True])
def test_unique_dim(device, dtype, consecutive):
    rng = np.random.default_rng(1)
    name = "unique_consecutive" if consecutive else "unique"
    for shape, dim in CASES:
        t = torch.tensor(rng.integers(0, 2, shape)).to(getattr(torch, dtype))
        x = vkt.tensor(t.numpy(), device=device)
        for inv, cnt in [(False, False), (True, True)] if dtype != "float32" else [(True, False), (False, True)]:
            want = getattr(torch, name)(t, dim=dim, return_inverse=inv, return_counts=cnt)
            got = getattr(x, name)(dim=dim, return_inverse=inv, return_counts=cnt)
            if not (inv or cnt):
                want, got = (want,), (got,)
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                same(g, w, f"{name} {dtype} {shape} dim={dim} output {k}")


def test_unique_dim_layouts_and_floats(device):
    # non-contiguous inputs; float rows that differ in one element; -0.0 == 0.0; sorted=False is sorted
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, (4, 10, 3)).astype(np.float32)
    a[1, 7] = [0.5, -0.0, 1]
    a[2, 7] = [0.5, 0.0, 1]
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    for view in [lambda y: y.transpose(0, 1), lambda y: y[:, ::2], lambda y: y.permute(2, 1, 0)[1:]]:
        for dim in range(3):
            for g, w in zip(vkt.unique(view(x), dim=dim, return_inverse=True, return_counts=True),
                            torch.unique(view(t), dim=dim, return_inverse=True, return_counts=True)):
                same(g, w, f"dim={dim}")
    same(vkt.unique(x, sorted=False, dim=1), torch.unique(t, sorted=False, dim=1), "sorted=False")
    same(vkt.unique_consecutive(x[:, 6:8], dim=2), torch.unique_consecutive(t[:, 6:8], dim=2), "consecutive")


@pytest.mark.parametrize("call", [
    lambda L: L.unique(L.tensor(3), dim=0),
    lambda L: L.unique_consecutive(L.tensor(3), dim=0),
    lambda L: L.unique(L.ones(3, 2), dim=2),
    lambda L: L.unique(L.ones(3, 2), dim=-3),
    lambda L: L.unique(L.ones(3, 0), dim=0),
    lambda L: L.unique_consecutive(L.ones(0, 3), dim=1),
    lambda L: L.unique(L.ones(2), dim=1.0),
    lambda L: L.ones(2).unique_consecutive(dim="a"),
])
def test_unique_dim_errors(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(want.type) as got:
        call(vkt)
    assert str(got.value) == str(want.value)


def test_unique_dim_takes_no_fallback(dev):
    a = np.random.default_rng(3).integers(0, 3, (40, 3)).astype(np.float32)
    vkt.vulkan.reset_fallback_stats()
    r = vkt.unique(vkt.tensor(a, device=dev), dim=0, return_inverse=True, return_counts=True)
    for t in r:
        t.cpu()
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("shape,k,dim", [((11,), 4, 0), ((3, 40), 7, 1), ((40, 3), 5, 0), ((2, 300), 33, -1),
                                         ((5, 6), 0, 1), ((5, 6), 6, 1)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_unsorted(device, shape, k, dim, largest):
    # the same set of values as torch's (whose order is unspecified), the indices pointing at them
    a = np.random.default_rng(4).permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    got = x.topk(k, dim, largest, sorted=False)
    want = torch.topk(t, k, dim, largest, sorted=False)
    assert got.values.shape == tuple(want.values.shape) and got.indices.dtype == vkt.int64
    assert np.array_equal(np.sort(got.values.cpu().numpy(), axis=dim), np.sort(want.values.numpy(), axis=dim))
    assert np.array_equal(np.take_along_axis(a, got.indices.cpu().numpy(), dim), got.values.cpu().numpy())
