# vkt.utils.data against torch.utils.data on the same data: batching, collation, samplers, shuffling
# (reproducible with a seeded vkt.Generator or vkt.manual_seed, not torch's order), DataLoader options and
# their errors, tqdm over a DataLoader, datasets of device tensors; and vkt.Generator's API.
import collections
import io

import numpy as np
import pytest

import vkt
from vkt.utils import data as vdata

torch = pytest.importorskip("torch")
tdata = torch.utils.data

Point = collections.namedtuple("Point", ["x", "y"])


def as_plain(batch):
    """A batch of either library as NumPy arrays (with the dtype's name) inside the same containers."""
    if isinstance(batch, (vkt.Tensor, torch.Tensor)):
        return ("tensor", str(batch.dtype).split(".")[-1], batch.cpu().numpy().tolist())
    if isinstance(batch, dict):
        return (type(batch).__name__, {k: as_plain(v) for k, v in batch.items()})
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [as_plain(b) for b in batch])
    return batch


def assert_same_batches(vkt_loader, torch_loader):
    got = [as_plain(b) for b in vkt_loader]
    want = [as_plain(b) for b in torch_loader]
    assert len(got) == len(vkt_loader) == len(torch_loader) == len(want)
    assert got == want


rng = np.random.default_rng(0)
X = rng.standard_normal((11, 3)).astype(np.float32)
Y = np.arange(11)

# name -> (vkt dataset, torch dataset) holding the same samples
SAMPLES = {
    "tensors": lambda: (vdata.TensorDataset(vkt.tensor(X), vkt.tensor(Y)),
                        tdata.TensorDataset(torch.tensor(X), torch.tensor(Y))),
    "arrays": lambda: ([X[i] for i in range(11)],) * 2,
    "int": lambda: (list(range(11)),) * 2,
    "float": lambda: ([i / 4 for i in range(11)],) * 2,
    "bool": lambda: ([i % 3 == 0 for i in range(11)],) * 2,
    "numpy_scalars": lambda: ([np.float16(i) for i in range(11)],) * 2,
    "dicts": lambda: ([{"x": X[i], "label": int(Y[i]), "name": f"s{i}", "w": float(i)} for i in range(11)],) * 2,
    "ordered_dicts": lambda: ([collections.OrderedDict(b=i, a=np.uint8(i)) for i in range(11)],) * 2,
    "tuples": lambda: ([(X[i], i, (i, b"x")) for i in range(11)],) * 2,
    "lists": lambda: ([[i, [float(i), i % 2 == 0]] for i in range(11)],) * 2,
    "namedtuples": lambda: ([Point(X[i], i) for i in range(11)],) * 2,
    "int_arrays": lambda: ([np.array([i, -i], dtype=np.int32) for i in range(11)],) * 2,
    "bool_arrays": lambda: ([np.array([i % 2 == 0]) for i in range(11)],) * 2,
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (4, False), (4, True), (11, False), (20, True)])
def test_batches_match_torch(name, batch_size, drop_last):
    vds, tds = SAMPLES[name]()
    assert_same_batches(vdata.DataLoader(vds, batch_size=batch_size, drop_last=drop_last),
                        tdata.DataLoader(tds, batch_size=batch_size, drop_last=drop_last))


@pytest.mark.parametrize("name", ["arrays", "dicts", "tuples", "int", "namedtuples"])
def test_no_auto_batching_converts_as_torch(name):
    vds, tds = SAMPLES[name]()
    assert_same_batches(vdata.DataLoader(vds, batch_size=None), tdata.DataLoader(tds, batch_size=None))


def test_batch_sampler_and_sampler_options_match_torch():
    vds, tds = SAMPLES["tensors"]()
    groups = [[3, 1], [0, 10, 9], [5]]
    assert_same_batches(vdata.DataLoader(vds, batch_sampler=groups), tdata.DataLoader(tds, batch_sampler=groups))
    order = [4, 2, 8, 0]
    assert_same_batches(vdata.DataLoader(vds, sampler=order, batch_size=3),
                        tdata.DataLoader(tds, sampler=order, batch_size=3))
    assert_same_batches(vdata.DataLoader(vds, batch_sampler=vdata.BatchSampler(range(11), 5, True)),
                        tdata.DataLoader(tds, batch_sampler=tdata.BatchSampler(range(11), 5, True)))


def test_custom_collate_fn_and_getitems():
    class Rows(vdata.Dataset):
        calls = []

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            return [i * 10 for i in idx]

        def __len__(self):
            return 5

    loader = vdata.DataLoader(Rows(), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(loader) == [10, 50, 40]
    assert Rows.calls == [[0, 1], [2, 3], [4]]


class Stream(vdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return (np.full(2, i, dtype=np.int64) for i in range(self.n))

    def __len__(self):
        return self.n


class TorchStream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return (np.full(2, i, dtype=np.int64) for i in range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("batch_size,drop_last", [(None, False), (1, False), (3, False), (3, True), (7, True)])
def test_iterable_dataset_matches_torch(batch_size, drop_last):
    assert_same_batches(vdata.DataLoader(Stream(7), batch_size=batch_size, drop_last=drop_last),
                        tdata.DataLoader(TorchStream(7), batch_size=batch_size, drop_last=drop_last))


def test_chain_and_concat_datasets():
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, vdata.ChainDataset) and len(chained) == 5
    assert [int(a[0]) for a in chained] == [0, 1, 0, 1, 2]
    concat = vdata.TensorDataset(vkt.arange(3)) + vdata.TensorDataset(vkt.arange(10, 14))
    tconcat = tdata.TensorDataset(torch.arange(3)) + tdata.TensorDataset(torch.arange(10, 14))
    assert isinstance(concat, vdata.ConcatDataset) and concat.cumulative_sizes == tconcat.cumulative_sizes
    for i in range(-7, 7):
        assert concat[i][0].item() == tconcat[i][0].item()
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        concat[-8]
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        vdata.ConcatDataset([Stream(2)])
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        vdata.ConcatDataset([])


def test_subset_and_tensor_dataset_indexing():
    x = vkt.arange(12).reshape(6, 2)
    ds = vdata.TensorDataset(x, vkt.arange(6))
    assert len(ds) == 6 and ds[2][0].tolist() == [4, 5] and ds[-1][1].item() == 5
    sub = vdata.Subset(ds, [5, 0, 3])
    assert len(sub) == 3 and sub[0][1].item() == 5
    assert [b[1].tolist() for b in vdata.DataLoader(sub, batch_size=2)] == [[5, 0], [3]]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        vdata.TensorDataset(vkt.zeros(3), vkt.zeros(4))


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.34, 0.33, 0.33], [10]])
def test_random_split_sizes_match_torch_and_cover(lengths):
    parts = vdata.random_split(range(10), lengths, generator=vkt.Generator().manual_seed(1))
    tparts = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [len(p) for p in tparts]
    assert sorted(i for p in parts for i in p) == list(range(10))
    again = vdata.random_split(range(10), lengths, generator=vkt.Generator().manual_seed(1))
    assert [list(p) for p in parts] == [list(p) for p in again]


def test_random_split_errors_and_global_seed():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        vdata.random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        vdata.random_split(range(10), [1.5, -0.5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        vdata.random_split(range(2), [1.0, 0.0])
    vkt.manual_seed(5)
    a = [list(p) for p in vdata.random_split(range(20), [0.5, 0.5])]
    vkt.manual_seed(5)
    assert a == [list(p) for p in vdata.random_split(range(20), [0.5, 0.5])]


def epoch_order(loader):
    return [i for batch in loader for i in batch[1].tolist()]


def test_shuffle_is_a_reproducible_permutation():
    ds = vdata.TensorDataset(vkt.zeros(50, 2), vkt.arange(50))
    loader = vdata.DataLoader(ds, batch_size=8, shuffle=True, generator=vkt.Generator().manual_seed(7))
    first, second = epoch_order(loader), epoch_order(loader)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second and first != list(range(50))
    again = vdata.DataLoader(ds, batch_size=8, shuffle=True, generator=vkt.Generator().manual_seed(7))
    assert epoch_order(again) == first and epoch_order(again) == second
    other = vdata.DataLoader(ds, batch_size=8, shuffle=True, generator=vkt.Generator().manual_seed(8))
    assert epoch_order(other) != first


def test_shuffle_without_generator_follows_manual_seed():
    ds = vdata.TensorDataset(vkt.zeros(40), vkt.arange(40))
    loader = vdata.DataLoader(ds, batch_size=16, shuffle=True)
    vkt.manual_seed(123)
    a = epoch_order(loader), epoch_order(loader)
    vkt.manual_seed(123)
    assert (epoch_order(loader), epoch_order(loader)) == a
    vkt.manual_seed(124)
    assert epoch_order(loader) != a[0]


def test_samplers_match_torch():
    assert list(vdata.SequentialSampler(range(5))) == list(tdata.SequentialSampler(range(5)))
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (0, 2, False)]:
        v, t = vdata.BatchSampler(range(n), bs, drop), tdata.BatchSampler(range(n), bs, drop)
        assert list(v) == list(t) and len(v) == len(t)
    g = vkt.Generator().manual_seed(0)
    drawn = list(vdata.RandomSampler(range(6), replacement=True, num_samples=40, generator=g))
    assert len(drawn) == 40 and set(drawn) <= set(range(6))
    longer = list(vdata.RandomSampler(range(6), num_samples=15, generator=g))
    assert len(longer) == 15 and sorted(longer[:6]) == sorted(longer[6:12]) == list(range(6))
    sub = list(vdata.SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    weighted = list(vdata.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 30, generator=g))
    assert len(weighted) == 30 and set(weighted) <= {1, 3}
    without = vdata.WeightedRandomSampler(vkt.tensor([1.0, 2.0, 0.5]), 3, replacement=False, generator=g)
    assert sorted(without) == [0, 1, 2]


SAMPLER_ERRORS = [
    (lambda m: m.BatchSampler(range(3), 0, False), ValueError),
    (lambda m: m.BatchSampler(range(3), True, False), ValueError),
    (lambda m: m.BatchSampler(range(3), 2, 1), ValueError),
    (lambda m: m.RandomSampler(range(3), replacement=1), TypeError),
    (lambda m: m.RandomSampler(range(3), num_samples=0), ValueError),
    (lambda m: m.RandomSampler([]), ValueError),
    (lambda m: m.WeightedRandomSampler([1.0, 2.0], 0), ValueError),
    (lambda m: m.WeightedRandomSampler([[1.0, 2.0]], 2), ValueError),
    (lambda m: m.WeightedRandomSampler([1.0, 2.0], 2, replacement=None), ValueError),
]


@pytest.mark.parametrize("make,error", SAMPLER_ERRORS)
def test_sampler_errors_match_torch(make, error):
    with pytest.raises(error) as want:
        make(tdata)
    with pytest.raises(error, match=str(want.value).replace("(", r"\(").replace(")", r"\)")):
        make(vdata)


LOADER_ERRORS = [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
    dict(sampler=[0, 1], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], drop_last=True), dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="spawn"), dict(num_workers=1, prefetch_factor=-1),
]


@pytest.mark.parametrize("kwargs", LOADER_ERRORS)
def test_loader_option_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as want:
        tdata.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(ValueError) as got:
        vdata.DataLoader(list(range(4)), **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])])
def test_iterable_dataset_option_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as want:
        tdata.DataLoader(TorchStream(3), **kwargs)
    with pytest.raises(ValueError) as got:
        vdata.DataLoader(Stream(3), **kwargs)
    assert str(got.value).split(", but")[0] == str(want.value).split(", but")[0]


def test_loader_attributes_are_frozen_and_lengths_match_torch():
    loader = vdata.DataLoader(list(range(10)), batch_size=3)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 4
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, False), (1, 4, True), (0, 2, False)]:
        assert len(vdata.DataLoader(list(range(n)), batch_size=bs, drop_last=drop)) == \
            len(tdata.DataLoader(list(range(n)), batch_size=bs, drop_last=drop))
    assert len(vdata.DataLoader(Stream(7), batch_size=2)) == 4
    assert len(vdata.DataLoader(Stream(7), batch_size=2, drop_last=True)) == 3


def test_workers_run_in_process():
    vds, _ = SAMPLES["dicts"]()
    plain = [as_plain(b) for b in vdata.DataLoader(vds, batch_size=4)]
    assert [as_plain(b) for b in vdata.DataLoader(vds, batch_size=4, num_workers=3, persistent_workers=True,
                                                  prefetch_factor=4)] == plain
    assert vdata.get_worker_info() is None


COLLATE_ERRORS = [
    ([[1, 2], [3]], RuntimeError), ([None, None], TypeError), ([np.array(["a"]), np.array(["b"])], TypeError),
    ([object()], TypeError),
]


@pytest.mark.parametrize("batch,error", COLLATE_ERRORS)
def test_collate_errors_match_torch(batch, error):
    with pytest.raises(error) as want:
        tdata.default_collate(batch)
    with pytest.raises(error) as got:
        vdata.default_collate(batch)
    assert str(got.value) == str(want.value)


def test_collate_stacks_tensors_on_their_device(device):
    got = vdata.default_collate([vkt.tensor([1.0, 2.0], device=device), vkt.tensor([3.0, 4.0], device=device)])
    assert got.device.type == device and got.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        vdata.default_collate([vkt.zeros(2, device=device), vkt.zeros(3, device=device)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        vdata.default_collate([np.zeros(2), np.zeros(3)])


@pytest.mark.parametrize("shuffle", [False, True])
def test_dataset_on_the_device(device, shuffle):
    x = vkt.tensor(X, device=device)
    y = vkt.tensor(Y, device=device)
    loader = vdata.DataLoader(vdata.Subset(vdata.TensorDataset(x, y), list(range(1, 11))), batch_size=4,
                              shuffle=shuffle, generator=vkt.Generator().manual_seed(2))
    seen = []
    for xb, yb in loader:
        assert xb.device == x.device and yb.device == y.device
        assert xb.dtype == vkt.float32 and yb.dtype == vkt.int64
        np.testing.assert_array_equal(xb.cpu().numpy(), X[yb.cpu().numpy()])
        seen += yb.tolist()
    assert sorted(seen) == list(range(1, 11))


def test_loader_uploads_batches_to_its_device(dev):
    vds, _ = SAMPLES["dicts"]()
    for batch in vdata.DataLoader(vds, batch_size=4, device=dev):
        assert batch["x"].device.type == dev and batch["label"].device.type == dev
        assert isinstance(batch["name"][0], str)
    named = next(iter(vdata.DataLoader(SAMPLES["namedtuples"]()[0], batch_size=2, device=dev)))
    assert isinstance(named, Point) and named.x.device.type == dev


def test_loader_submits_the_recorded_step_before_the_next_batch(dev):
    a = vkt.ones(64, 64, device=dev)
    loader = iter(vdata.DataLoader([np.ones(3, np.float32)] * 4, batch_size=2, device=dev))
    next(loader)
    a.relu_()  # an in-place op on a computed tensor dispatches when called (a product would be pending)
    assert vkt._C._stream_state(dev)[0]  # the step is recorded, not yet submitted
    next(loader)
    assert not vkt._C._stream_state(dev)[0]


def test_tqdm_shows_the_loader_length():
    tqdm = pytest.importorskip("tqdm").tqdm
    loader = vdata.DataLoader(SAMPLES["tensors"]()[0], batch_size=4)
    bar = tqdm(loader, file=io.StringIO())
    assert bar.total == len(loader) == 3
    assert sum(len(b[1]) for b in bar) == 11
    assert bar.n == 3


def test_generator_api_matches_torch():
    g, tg = vkt.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed() and g.device == vkt.device("cpu")
    assert g.manual_seed(-1) is g and g.initial_seed() == tg.manual_seed(-1).initial_seed()
    seed = g.seed()
    assert isinstance(seed, int) and g.initial_seed() == seed
    state = g.manual_seed(11).get_state()
    assert state.dtype == vkt.uint8 and state.dim() == 1
    first = g._randperm(20)
    assert g.set_state(state) is g and g._randperm(20) == first and g.initial_seed() == 11
    for bad, error in [(2 ** 64, ValueError), (1.5, RuntimeError), (True, RuntimeError)]:
        with pytest.raises(error) as want:
            tg.manual_seed(bad)
        with pytest.raises(error, match=str(want.value)):
            g.manual_seed(bad)
    with pytest.raises(RuntimeError, match="Expected a Generator state of size"):
        g.set_state(vkt.zeros(3, dtype=vkt.uint8))
    with pytest.raises(TypeError):
        g.set_state(vkt.zeros(48))
    with pytest.raises(TypeError):
        g.set_state([1, 2])


@pytest.mark.parametrize("device", ["cpu"] + (["vulkan"] if vkt.vulkan.is_available() else []))
def test_creation_draws_from_a_generator(device):
    def g():
        return vkt.Generator().manual_seed(7)
    for make in (lambda **k: vkt.rand(2, 3, **k), lambda **k: vkt.randn(4, dtype=vkt.float64, **k),
                 lambda **k: vkt.randint(2, 9, (5,), **k), lambda **k: vkt.randint(9, size=(2, 2), **k),
                 lambda **k: vkt.randperm(6, **k)):
        a, b = make(generator=g(), device=device), make(generator=g(), device=device)
        assert a.device.type == device and np.array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert vkt.randn(3, generator=g(), requires_grad=True).requires_grad
    assert sorted(vkt.randperm(6, generator=g()).tolist()) == list(range(6))
    assert ((vkt.randint(2, 9, (100,), generator=g()) >= 2) & (vkt.randint(2, 9, (100,)) < 9)).all()
    with pytest.raises(TypeError, match="generator"):
        vkt.rand(2, generator=3)
    with pytest.raises(TypeError, match="generator"):
        vkt.zeros(2, generator=g())
