# vkt's distances (cosine_similarity, pairwise_distance, pdist, vkt.cdist, vkt.dist) and the margin and
# likelihood losses against torch's on both devices, float32 and float64: values and the gradient of every
# input torch differentiates, each reduction, broadcasting, zero vectors and ties, empty batches, the modules,
# and torch's errors and warnings.
import math
import warnings

import numpy as np
import pytest

import vkt
from vkt import nn
from vkt.nn import functional as F

from conftest import assert_close, raised

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
REDUCTIONS = ["none", "mean", "sum"]
INF = math.inf


def randn(*shape):
    return np.asarray(RNG.standard_normal(shape))


def signs(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


def ints(*shape):
    """Small integers as floats: repeated values, so ties for the inf norm and zero differences."""
    return RNG.integers(-2, 3, shape).astype(np.float64)


def with_zero_rows(*shape):
    x = randn(*shape)
    x[::2] = 0
    return x


def index(high, *shape):
    return RNG.integers(0, high, shape).astype(np.int64)


class Arg:
    """An argument that is not differentiated: a class-index or ±1 target, or an array to keep constant."""

    def __init__(self, value):
        self.value = value


def convert(value, lib, device, dtype):
    """value as torch's or vkt's tensor (floats in dtype, or as they are for None; a leaf requiring grad unless
    wrapped in Arg)."""
    grad = not isinstance(value, Arg)
    value = value.value if isinstance(value, Arg) else value
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype.kind == "f" and dtype is not None:
        value = value.astype(dtype)
    grad = grad and value.dtype.kind == "f"
    if lib is torch:
        return torch.tensor(value, requires_grad=grad)
    return vkt.tensor(value, device=device, requires_grad=grad)


def tolerances(dtype, device):
    if dtype != "float64":
        return 1e-4, 1e-5
    return 1e-7, 1e-10


def compare(call, args, kwargs, device, dtype, variants=({},)):
    """call(lib, *args, **kwargs, **variant) for each variant, with torch and with vkt on the same NumPy values:
    each output, then the gradients of every floating argument (those not wrapped in Arg) after one backward
    through all the outputs with the same seeds. A gradient torch leaves as None (p = 0 norms) must be None or
    zero in vkt."""
    rtol, atol = tolerances(dtype, device)

    def run(lib):
        xs = [convert(a, lib, device, dtype) for a in args]
        kw = {k: convert(v, lib, device, dtype) for k, v in kwargs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [call(lib, *xs, **kw, **variant) for variant in variants], xs + list(kw.values())

    touts, tins = run(torch)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    vouts, vins = run(vkt)
    for ty, vy in zip(touts, vouts):
        assert vy.dtype == getattr(vkt, str(ty.dtype).split(".")[1]) and vy.device.type == device
        assert_close(vy.detach(), ty.detach().numpy(), rtol, atol)
    pairs = [(ty, vy) for ty, vy in zip(touts, vouts) if ty.requires_grad]
    if not pairs:
        return
    seeds = [RNG.standard_normal(tuple(ty.shape)) for ty, _ in pairs]
    torch.autograd.backward([ty for ty, _ in pairs],
                            [torch.tensor(g, dtype=ty.dtype) for (ty, _), g in zip(pairs, seeds)])
    vkt.autograd.backward([vy for _, vy in pairs],
                          [vkt.tensor(g, dtype=vy.dtype, device=device) for (_, vy), g in zip(pairs, seeds)])
    if device == "vulkan" and dtype == "float32":
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    for t, v in zip(tins, vins):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if t.grad is None:
                assert v.grad is None or not v.grad.cpu().numpy().any()
            else:
                assert_close(v.grad, t.grad.numpy(), rtol, atol)


def functional(name):
    """Calls torch.nn.functional.name or vkt.nn.functional.name; for cdist and dist, torch.name or vkt.name."""
    def call(lib, *args, **kwargs):
        if name in ("cdist", "dist"):
            return getattr(lib, name)(*args, **kwargs)
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    return call


PS = [{"p": p} for p in (0, 0.5, 1, 1.5, 2, 3, INF)]

# (function, arguments, keyword arguments, variants: keyword arguments tried in turn on the same inputs)
DISTANCES = [
    ("cosine_similarity", lambda: [randn(4, 5), randn(4, 5)], {}, [{}, {"dim": 0}, {"dim": -1, "eps": 3.0}]),
    ("cosine_similarity", lambda: [randn(3, 1, 5), randn(4, 5)], {"dim": -1}, [{}]),
    ("cosine_similarity", lambda: [randn(6, 3), randn(1, 3)], {}, [{"dim": 0}, {"dim": 1}]),
    ("cosine_similarity", lambda: [with_zero_rows(4, 3), randn(4, 3)], {}, [{}, {"eps": 2.0}]),
    ("cosine_similarity", lambda: [randn(3) * 1e-5, randn(3) * 1e-4], {"dim": 0}, [{}, {"eps": 1e-4}]),
    ("cosine_similarity", lambda: [randn(), randn()], {"dim": 0}, [{}]),
    ("cosine_similarity", lambda: [randn(0, 3), randn(0, 3)], {}, [{}]),
    ("cosine_similarity", lambda: [randn(2, 0), randn(2, 0)], {}, [{}]),
    ("cosine_similarity", lambda: [randn(2, 3), Arg(index(3, 2, 3))], {}, [{}]),
    ("pairwise_distance", lambda: [ints(4, 5), ints(4, 5)], {"eps": 0.0}, PS),
    ("pairwise_distance", lambda: [randn(4, 5), randn(5)], {}, PS + [{"p": -1.0}, {"p": -INF}]),
    ("pairwise_distance", lambda: [randn(3, 1, 4), randn(2, 4)], {"keepdim": True}, [{}, {"p": 1}]),
    ("pairwise_distance", lambda: [randn(4), randn(4)], {}, [{"keepdim": True}, {"keepdim": False}]),
    ("pairwise_distance", lambda: [randn(), randn()], {}, [{}]),
    ("pairwise_distance", lambda: [randn(0, 4), randn(0, 4)], {}, [{"p": 3}]),
    ("pairwise_distance", lambda: [Arg(index(3, 2, 4)), Arg(index(3, 4))], {}, [{}]),
    ("pdist", lambda: [ints(5, 3)], {}, PS),
    ("pdist", lambda: [randn(6, 4)], {}, [{}, {"p": 0.7}]),
    ("pdist", lambda: [randn(1, 3)], {}, [{}]),
    ("pdist", lambda: [Arg(randn(0, 3))], {}, [{}]),  # torch 2.13's pdist backward crashes on 0 rows: values only
    ("pdist", lambda: [randn(3, 0)], {}, [{}, {"p": INF}]),
    ("cdist", lambda: [ints(4, 3), ints(5, 3)], {}, PS),
    ("cdist", lambda: [randn(2, 1, 4, 3), randn(3, 5, 3)], {}, [{"p": 1}, {"p": 2}, {"p": INF}]),
    ("cdist", lambda: [randn(30, 3), randn(4, 3)], {}, [{}, {"compute_mode": "donot_use_mm_for_euclid_dist"}]),
    ("cdist", lambda: [randn(2, 4, 3), randn(27, 3)], {}, [{}]),
    ("cdist", lambda: [ints(3, 2), ints(4, 2)], {"compute_mode": "use_mm_for_euclid_dist"}, [{}]),
    ("cdist", lambda: [randn(0, 3), randn(4, 3)], {}, [{}]),
    ("cdist", lambda: [randn(2, 0, 3), randn(4, 3)], {}, [{"p": 1}]),
    ("cdist", lambda: [randn(2, 0), randn(3, 0)], {}, [{}, {"p": INF}]),
    ("dist", lambda: [ints(3, 4), ints(4)], {}, PS[1:] + [{"p": -INF}]),
    ("dist", lambda: [Arg(ints(3, 4)), Arg(ints(4))], {"p": 0}, [{}]),  # torch 2.13 fails its backward for p = 0
    ("dist", lambda: [randn(2, 3), randn(2, 3)], {}, [{}]),
    ("dist", lambda: [randn(), randn(3)], {"p": 3}, [{}]),
    ("dist", lambda: [Arg(index(3, 2, 4)), randn(4)], {}, [{}, {"p": 1}]),
]


def on_devices(table):
    """Each case on cpu in float32 and float64 and on vulkan in float32, and each function's first case on vulkan
    in float64 too: on lavapipe every new kernel is a compile, and float64's kernels are float32's code."""
    params, seen = [], set()
    for i, case in enumerate(table):
        combos = [("cpu", "float32"), ("cpu", "float64"), ("vulkan", "float32")]
        if case[0] not in seen:
            seen.add(case[0])
            combos.append(("vulkan", "float64"))
        params += [pytest.param(device, dtype, *case, id=f"{device}-{dtype}-{case[0]}-{i}") for device, dtype in combos]
    return params


def on_device(request, device):
    """device, skipping the test (through conftest's `dev` fixture) where there is no Vulkan."""
    return request.getfixturevalue("dev") if device == "vulkan" else device


@pytest.mark.parametrize("device,dtype,name,make,kwargs,variants", on_devices(DISTANCES))
def test_distances(request, device, dtype, name, make, kwargs, variants):
    compare(functional(name), make(), kwargs, on_device(request, device), dtype, variants)


def test_cosine_similarity_mixed_dtypes(device):
    """Integer operands take the common floating dtype; two floating ones keep theirs until the division."""
    compare(functional("cosine_similarity"), [Arg(index(4, 2, 3)), randn(2, 3)], {}, device, "float64")
    compare(functional("cosine_similarity"), [randn(2, 3).astype(np.float32), randn(2, 3)], {}, device, None)


EACH_REDUCTION = [{"reduction": r} for r in REDUCTIONS]

LOSSES = [
    ("triplet_margin_loss", lambda: [randn(4, 5), randn(4, 5), randn(4, 5)], {}),
    ("triplet_margin_loss", lambda: [randn(4, 5), randn(4, 5), randn(4, 5)], {"margin": 2.0, "p": 1, "swap": True}),
    ("triplet_margin_loss", lambda: [randn(4, 5), randn(1, 5), randn(4, 5)], {"p": INF, "eps": 0.1, "swap": True}),
    ("triplet_margin_loss", lambda: [randn(5), randn(5), randn(5)], {"margin": 3.0}),
    ("triplet_margin_loss", lambda: [randn(0, 3), randn(0, 3), randn(0, 3)], {}),
    ("cosine_embedding_loss", lambda: [randn(6, 4), randn(6, 4), Arg(signs(6))], {}),
    ("cosine_embedding_loss", lambda: [randn(6, 4), randn(1, 4), Arg(signs(6))], {"margin": -0.3}),
    ("cosine_embedding_loss", lambda: [randn(5, 3), with_zero_rows(5, 3), Arg(np.array([1, -1, 0, 1, -1.0]))],
     {"margin": 0.2}),
    ("cosine_embedding_loss", lambda: [randn(4), randn(4), Arg(np.array(-1.0))], {}),
    ("cosine_embedding_loss", lambda: [randn(0, 4), randn(0, 4), Arg(np.zeros(0))], {}),
    ("margin_ranking_loss", lambda: [randn(6), randn(6), signs(6)], {}),
    ("margin_ranking_loss", lambda: [randn(3, 1), randn(1, 4), signs(3, 4)], {"margin": 0.5}),
    ("margin_ranking_loss", lambda: [randn(4), randn(4), Arg(index(2, 4) * 2 - 1)], {"margin": 0.1}),
    ("hinge_embedding_loss", lambda: [randn(4, 5), Arg(signs(4, 5))], {}),
    ("hinge_embedding_loss", lambda: [randn(4, 5), Arg(signs(5))], {"margin": 0.3}),
    ("hinge_embedding_loss", lambda: [randn(5), Arg(signs(3, 5))], {"margin": 2.0}),
    ("hinge_embedding_loss", lambda: [randn(6), Arg(np.array([1, -1, 0, 2, 1, -1.0]))], {}),
    ("soft_margin_loss", lambda: [randn(4, 5) * 3, Arg(signs(4, 5))], {}),
    ("soft_margin_loss", lambda: [randn(4, 5), Arg(randn(5))], {}),
    ("soft_margin_loss", lambda: [randn(0, 2), Arg(randn(0, 2))], {}),
    ("multilabel_soft_margin_loss", lambda: [randn(4, 5), (randn(4, 5) > 0) * 1.0], {}),
    ("multilabel_soft_margin_loss", lambda: [randn(4, 5), RNG.random((4, 5)), RNG.random(5)], {}),
    ("multilabel_soft_margin_loss", lambda: [randn(2, 3, 4), RNG.random((2, 3, 4))], {}),
    ("multilabel_soft_margin_loss", lambda: [randn(5), RNG.random(5)], {}),
    ("multi_margin_loss", lambda: [randn(5, 4), Arg(index(4, 5))], {}),
    ("multi_margin_loss", lambda: [randn(5, 4), Arg(index(4, 5))], {"p": 2, "margin": 0.7}),
    ("multi_margin_loss", lambda: [randn(5, 4), Arg(index(4, 5))], {"weight": Arg(RNG.random(4))}),
    ("multi_margin_loss", lambda: [randn(5, 4), Arg(index(4, 5))], {"p": 2, "weight": Arg(RNG.random(4))}),
    ("multi_margin_loss", lambda: [ints(6, 3), Arg(index(3, 6))], {}),
    ("multi_margin_loss", lambda: [randn(4), Arg(np.array(2))], {}),
    ("multi_margin_loss", lambda: [randn(4), Arg(np.array([1]))], {}),
    ("multi_margin_loss", lambda: [randn(1, 3), Arg(np.array(0))], {}),
    ("multi_margin_loss", lambda: [randn(), Arg(np.array(0))], {}),
    ("poisson_nll_loss", lambda: [randn(4, 5), RNG.random((4, 5)) * 4], {}),
    ("poisson_nll_loss", lambda: [randn(4, 5), RNG.random(5) * 4 + 0.5], {"full": True}),
    ("poisson_nll_loss", lambda: [RNG.random((4, 5)) + 0.1, RNG.random((4, 5)) * 4], {"log_input": False}),
    ("poisson_nll_loss", lambda: [RNG.random(5) + 0.1, RNG.random((3, 5)) * 4 + 0.5],
     {"log_input": False, "full": True, "eps": 0.1}),
    ("poisson_nll_loss", lambda: [randn(4, 5), Arg(index(6, 4, 5))], {"full": True}),
    ("gaussian_nll_loss", lambda: [randn(4, 5), randn(4, 5), RNG.random((4, 5)) + 0.1], {}),
    ("gaussian_nll_loss", lambda: [randn(4, 5), randn(4, 5), RNG.random(4) + 0.1], {"full": True}),
    ("gaussian_nll_loss", lambda: [randn(4, 5), randn(5), RNG.random((4, 1)) + 0.1], {}),
    ("gaussian_nll_loss", lambda: [randn(3, 4, 2), randn(3, 4, 2), RNG.random((3, 1, 2))], {"eps": 0.3}),
    ("gaussian_nll_loss", lambda: [randn(4, 5), randn(4, 5), 0.5], {}),
    ("gaussian_nll_loss", lambda: [randn(4, 5), randn(4, 5), np.where(RNG.random((4, 5)) < .5, 0, .5)], {}),
]


@pytest.mark.parametrize("device,dtype,name,make,kwargs", on_devices(LOSSES))
def test_losses(request, device, dtype, name, make, kwargs):
    """Each reduction of the same inputs; the gradients are of all three outputs at once."""
    compare(functional(name), make(), kwargs, on_device(request, device), dtype, EACH_REDUCTION)


MIXED_DTYPES = [
    ("soft_margin_loss", lambda: [randn(4).astype(np.float32), Arg(signs(4))]),  # input's dtype, as torch writes
    ("poisson_nll_loss", lambda: [randn(4).astype(np.float32), RNG.random(4)]),
    ("margin_ranking_loss", lambda: [randn(4).astype(np.float32), randn(4), Arg(index(2, 4) * 2 - 1)]),
    ("hinge_embedding_loss", lambda: [randn(4), Arg(index(2, 4) * 2 - 1)]),
    ("cosine_embedding_loss", lambda: [randn(2, 3).astype(np.float32), randn(2, 3), Arg(index(2, 2) * 2 - 1)]),
    ("gaussian_nll_loss", lambda: [Arg(index(3, 4)), randn(4).astype(np.float32), 1.0]),
]


@pytest.mark.parametrize("name,make", MIXED_DTYPES, ids=[c[0] for c in MIXED_DTYPES])
def test_loss_dtype_promotion(name, make, device):
    compare(functional(name), make(), {}, device, None, EACH_REDUCTION)


def test_multi_margin_empty_batch(device):
    """torch leaves a reduced empty batch uninitialised; vkt's is the empty sum (0) or mean (NaN)."""
    x = vkt.zeros(0, 3, device=device, requires_grad=True)
    t = vkt.zeros(0, dtype=vkt.int64, device=device)
    assert F.multi_margin_loss(x, t, reduction="none").shape == (0,)
    assert F.multi_margin_loss(x, t, reduction="sum").item() == 0
    assert math.isnan(F.multi_margin_loss(x, t).item())


LEGACY = [{"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}]


@pytest.mark.parametrize("name,args", [
    ("triplet_margin_loss", lambda: [randn(3, 4), randn(3, 4), randn(3, 4)]),
    ("margin_ranking_loss", lambda: [randn(4), randn(4), signs(4)]),
    ("hinge_embedding_loss", lambda: [randn(4), Arg(signs(4))]),
    ("soft_margin_loss", lambda: [randn(4), Arg(signs(4))]),
    ("cosine_embedding_loss", lambda: [randn(3, 4), randn(3, 4), Arg(signs(3))]),
    ("multilabel_soft_margin_loss", lambda: [randn(3, 4), RNG.random((3, 4))]),
    ("multi_margin_loss", lambda: [randn(3, 4), Arg(index(4, 3))]),
    ("poisson_nll_loss", lambda: [randn(3, 4), RNG.random((3, 4))]),
])
def test_legacy_reduction_arguments(name, args, device):
    compare(functional(name), args(), {}, device, "float64", LEGACY)
    x = [convert(a, vkt, device, "float64") for a in args()]
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        getattr(F, name)(*x, size_average=False)


@pytest.mark.parametrize("name,args", [
    ("triplet_margin_loss", lambda: [randn(3, 4), randn(3, 4), randn(3, 4)]),
    ("hinge_embedding_loss", lambda: [randn(4), Arg(signs(4))]),
    ("multi_margin_loss", lambda: [randn(3, 4), Arg(index(4, 3))]),
])
def test_elementwise_mean_is_mean_with_a_warning(name, args, device):
    compare(functional(name), args(), {"reduction": "elementwise_mean"}, device, "float64")
    x = [convert(a, vkt, device, "float64") for a in args()]
    with pytest.warns(UserWarning, match="reduction='elementwise_mean' is deprecated"):
        getattr(F, name)(*x, reduction="elementwise_mean")


MODULES = [
    ("CosineSimilarity", lambda: [randn(3, 4), randn(3, 4)], {"dim": 0, "eps": 1e-3}),
    ("PairwiseDistance", lambda: [randn(3, 4), randn(3, 4)], {"p": 1.5, "keepdim": True}),
    ("TripletMarginLoss", lambda: [randn(3, 4), randn(3, 4), randn(3, 4)], {"margin": 0.5, "swap": True}),
    ("CosineEmbeddingLoss", lambda: [randn(3, 4), randn(3, 4), Arg(signs(3))], {"margin": 0.1}),
    ("MarginRankingLoss", lambda: [randn(4), randn(4), signs(4)], {"margin": 0.2, "reduction": "sum"}),
    ("HingeEmbeddingLoss", lambda: [randn(4), Arg(signs(4))], {"margin": 0.5, "reduction": "none"}),
    ("SoftMarginLoss", lambda: [randn(4), Arg(signs(4))], {}),
    ("MultiLabelSoftMarginLoss", lambda: [randn(3, 4), RNG.random((3, 4))], {"weight": Arg(RNG.random(4))}),
    ("MultiMarginLoss", lambda: [randn(3, 4), Arg(index(4, 3))], {"p": 2, "weight": Arg(RNG.random(4))}),
    ("PoissonNLLLoss", lambda: [randn(3, 4), RNG.random((3, 4)) * 3], {"full": True}),
    ("GaussianNLLLoss", lambda: [randn(3, 4), randn(3, 4), RNG.random((3, 4))], {"full": True, "eps": 0.1}),
]


@pytest.mark.parametrize("name,make,kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_modules(name, make, kwargs, device):
    def call(lib, *args, **kw):
        return getattr(lib.nn, name)(**kw)(*args)
    compare(call, make(), kwargs, device, "float32")


@pytest.mark.parametrize("name,make,kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_module_repr_and_buffers(name, make, kwargs):
    vm = getattr(nn, name)(**{k: convert(v, vkt, "cpu", "float32") for k, v in kwargs.items()})
    tm = getattr(torch.nn, name)(**{k: convert(v, torch, "cpu", "float32") for k, v in kwargs.items()})
    assert repr(vm) == repr(tm)
    assert [n for n, _ in vm.named_buffers()] == [n for n, _ in tm.named_buffers()]


@pytest.mark.parametrize("name", ["TripletMarginLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
                                  "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
                                  "MultiMarginLoss", "PoissonNLLLoss"])
def test_module_legacy_reduction(name):
    for legacy in LEGACY:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            got = getattr(nn, name)(**legacy).reduction
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert got == getattr(torch.nn, name)(**legacy).reduction


def _long(lib, *shape):
    return lib.zeros(*shape, dtype=lib.int64)


ERRORS = [
    lambda F, lib: F.cosine_similarity(_long(lib, 3), _long(lib, 3), 0),
    lambda F, lib: F.cosine_similarity(lib.ones(2, 3), lib.ones(4, 3)),
    lambda F, lib: F.cosine_similarity(lib.ones(2, 3), lib.ones(2, 3), 2),
    lambda F, lib: F.pairwise_distance(lib.ones(2, 3), lib.ones(2, 4)),
    lambda F, lib: F.pdist(lib.ones(3)),
    lambda F, lib: F.pdist(_long(lib, 3, 2)),
    lambda F, lib: F.pdist(lib.ones(3, 2), -1),
    lambda F, lib: lib.cdist(lib.ones(3), lib.ones(2, 3)),
    lambda F, lib: lib.cdist(lib.ones(2, 3), lib.ones(3)),
    lambda F, lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 4)),
    lambda F, lib: lib.cdist(_long(lib, 2, 3), lib.ones(2, 3)),
    lambda F, lib: lib.cdist(lib.ones(30, 3), _long(lib, 2, 3)),
    lambda F, lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3, dtype=lib.float64)),
    lambda F, lib: lib.cdist(lib.ones(30, 3), lib.ones(2, 3, dtype=lib.float64)),
    lambda F, lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3), p=-1),
    lambda F, lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3), compute_mode="mm"),
    lambda F, lib: lib.cdist(lib.ones(2, 2, 3), lib.ones(3, 2, 3)),
    lambda F, lib: lib.dist(_long(lib, 3), _long(lib, 3)),
    lambda F, lib: lib.dist(lib.ones(2), lib.ones(3)),
    lambda F, lib: F.triplet_margin_loss(lib.ones(2, 3), lib.ones(3), lib.ones(2, 3)),
    lambda F, lib: F.triplet_margin_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 3), margin=0),
    lambda F, lib: F.triplet_margin_loss(lib.ones(3), lib.ones(3), lib.ones(3), reduction="avg"),
    lambda F, lib: F.cosine_embedding_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 2)),
    lambda F, lib: F.cosine_embedding_loss(lib.ones(2, 3), lib.ones(3), lib.ones(2)),
    lambda F, lib: F.cosine_embedding_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(())),
    lambda F, lib: F.cosine_embedding_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(3)),
    lambda F, lib: F.cosine_embedding_loss(lib.ones(2, 3), lib.ones(2, 4), lib.ones(2)),
    lambda F, lib: F.margin_ranking_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2)),
    lambda F, lib: F.margin_ranking_loss(lib.ones(2), lib.ones(3), lib.ones(2)),
    lambda F, lib: F.margin_ranking_loss(lib.ones(2), lib.ones(2), lib.ones(3)),
    lambda F, lib: F.hinge_embedding_loss(lib.ones(2, 3), lib.ones(4)),
    lambda F, lib: F.hinge_embedding_loss(lib.ones(3), lib.ones(3), reduction="x"),
    lambda F, lib: F.soft_margin_loss(lib.ones(3), lib.ones(2, 3)),
    lambda F, lib: F.soft_margin_loss(lib.ones(3), lib.ones(4)),
    lambda F, lib: F.soft_margin_loss(lib.ones(3), lib.ones(3, requires_grad=True)),
    lambda F, lib: F.multilabel_soft_margin_loss(lib.ones(2, 3), lib.ones(2, 3), reduction="x"),
    lambda F, lib: F.multilabel_soft_margin_loss(lib.ones(2, 3), lib.ones(2, 3), reduction="elementwise_mean"),
    lambda F, lib: F.multilabel_soft_margin_loss(lib.ones(()), lib.ones(())),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), _long(lib, 2), p=3),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), _long(lib, 2), weight=lib.ones(1, 3)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3, 4), _long(lib, 2)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 0), _long(lib, 2)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), _long(lib, 2, 1)),
    lambda F, lib: F.multi_margin_loss(lib.ones(3), _long(lib, 2)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), _long(lib, 2), weight=lib.ones(2)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), lib.zeros(2, dtype=lib.int32)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), lib.zeros(2)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), _long(lib, 2), weight=lib.ones(3, dtype=lib.float64)),
    lambda F, lib: F.multi_margin_loss(_long(lib, 2, 3), _long(lib, 2)),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), lib.tensor([0, 3])),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), lib.tensor([-1, 0])),
    lambda F, lib: F.multi_margin_loss(lib.ones(2, 3), _long(lib, 2), weight=lib.ones(3, requires_grad=True)),
    lambda F, lib: F.poisson_nll_loss(lib.ones(3), lib.ones(3), reduction="elementwise_mean"),
    lambda F, lib: F.poisson_nll_loss(lib.ones(2, 3), lib.ones(2, 4)),
    lambda F, lib: F.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(3)),
    lambda F, lib: F.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(1, 1)),
    lambda F, lib: F.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 0)),
    lambda F, lib: F.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), -1.0),
    lambda F, lib: F.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), -lib.ones(2, 3)),
    lambda F, lib: F.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 3), reduction="x"),
    lambda F, lib: lib.nn.MultiMarginLoss(p=3),
    lambda F, lib: lib.nn.MultiMarginLoss(weight=lib.ones(1, 3)),
    lambda F, lib: lib.nn.TripletMarginLoss(margin=0),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_torch(call):
    ref = raised(lambda: call(torch.nn.functional, torch))
    assert ref[0] is not None
    assert raised(lambda: call(F, vkt)) == ref
