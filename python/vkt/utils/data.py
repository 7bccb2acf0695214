"""vkt.utils.data: datasets, samplers, collation and DataLoader, as torch.utils.data names them.

Batches are made in this process (num_workers > 0 is accepted and runs here too). With device= a
loader first submits what that device has recorded (the step just written), then collates the next
batch on the host and uploads it; neither waits for the GPU, so the GPU runs the step meanwhile.
A TensorDataset (or a Subset of one) is batched with one index_select per tensor on the tensors' own
device, so data already on the GPU never comes back to the host.
"""
import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings

import numpy as np

from .. import _C
from ..random import _global_generator

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
    "collate", "default_collate", "default_convert", "default_collate_fn_map", "DataLoader", "get_worker_info",
]

# ---- datasets ----


class Dataset:
    """A map-style dataset: __getitem__(index) and, for the default samplers, __len__."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: __iter__ yields its samples."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows (first dimension) of each tensor, taken together."""

    def __init__(self, *tensors):
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of dataset at the given indices."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several map-style datasets, one after the other."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[d][idx - (self.cumulative_sizes[d - 1] if d else 0)]


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets, one stream after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def _split_lengths(n, fractions):
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(n * frac))
    for i in range(n - sum(lengths)):  # the remainder goes round-robin, as torch's
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=None):
    """Splits dataset into non-overlapping Subsets of the given lengths, or fractions summing to 1; without
    a generator the permutation comes from vkt's global random stream (vkt.manual_seed)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _split_lengths(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = (generator or _global_generator())._randperm(sum(lengths))
    ends = list(itertools.accumulate(lengths))
    return [Subset(dataset, indices[end - length:end]) for end, length in zip(ends, lengths)]


# ---- samplers ----


class Sampler:
    """Yields the indices (or lists of indices) a DataLoader fetches."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh random order each epoch (or num_samples draws with replacement); without a generator each
    epoch's order derives from vkt's global random stream, so vkt.manual_seed makes it reproducible."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, want = len(self.data_source), self.num_samples
        generator = self.generator or _global_generator()
        if self.replacement:
            yield from generator._randint(n, want)
            return
        for _ in range(want // n):
            yield from generator._randperm(n)
        yield from generator._randperm(n)[:want % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, without replacement."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in (self.generator or _global_generator())._randperm(len(self.indices)):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn from range(len(weights)) with probabilities proportional to weights."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.cpu().numpy() if isinstance(weights, _C.Tensor) else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not replacement and num_samples > np.count_nonzero(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        return iter((self.generator or _global_generator())._choice(self.weights, self.num_samples, self.replacement))

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of sampler into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# ---- collation ----

_np_str_obj = re.compile(r"[SaUO]")
_collate_err = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _collate_tensors(batch, *, collate_fn_map=None):
    return _C.stack(batch, 0)


def _collate_arrays(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _np_str_obj.search(elem.dtype.str) is not None:
        raise TypeError(_collate_err.format(elem.dtype))
    if any(b.shape != elem.shape for b in batch):  # vkt.stack says which entry differs
        return _C.stack([_C.tensor(b) for b in batch], 0)
    return _C.tensor(np.stack(batch))  # stacked on the host: one upload per batch


def _collate_numpy_scalars(batch, *, collate_fn_map=None):
    return _C.tensor(np.asarray(batch))


def _collate_floats(batch, *, collate_fn_map=None):
    return _C.tensor(batch, dtype=_C.float64)


def _collate_ints(batch, *, collate_fn_map=None):
    return _C.tensor(batch)


def _collate_strings(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    _C.Tensor: _collate_tensors,
    np.ndarray: _collate_arrays,
    (np.bool_, np.number, np.object_): _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
    str: _collate_strings,
    bytes: _collate_strings,
}


def _same_container(elem, values):
    """values in a container of elem's type where that type can be rebuilt, else a dict or a list."""
    try:
        if isinstance(elem, collections.abc.Mapping):
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(values)
                return clone
            return type(elem)(values)
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            clone[:] = values
            return clone
        return type(elem)(values)
    except TypeError:
        return values if isinstance(elem, collections.abc.Mapping) else list(values)


def collate(batch, *, collate_fn_map=None):
    """Collates a list of samples by the type of the first: collate_fn_map's function for its type (or the
    first entry it is an instance of), else mappings, namedtuples and sequences element by element."""
    elem = batch[0]
    if collate_fn_map is not None:
        if type(elem) in collate_fn_map:
            return collate_fn_map[type(elem)](batch, collate_fn_map=collate_fn_map)
        for kind, fn in collate_fn_map.items():
            if isinstance(elem, kind):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _same_container(elem, {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return columns if isinstance(elem, tuple) else _same_container(elem, columns)  # tuples give lists, as torch
    raise TypeError(_collate_err.format(type(elem)))


def default_collate(batch):
    """Stacks a list of samples into a batch: vkt tensors are stacked (on their device), NumPy arrays and
    numbers become tensors (floats float64, ints int64), strings stay lists, containers recurse."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """What the DataLoader does to each sample without batching: NumPy arrays and scalars become tensors,
    containers recurse, anything else is returned as it is."""
    if isinstance(data, _C.Tensor):
        return data
    if isinstance(data, (np.ndarray, np.bool_, np.number)):
        return data if _np_str_obj.search(data.dtype.str) else _C.tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _same_container(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_container(data, [default_convert(d) for d in data])
    return data


def _to_device(data, device):
    if isinstance(data, _C.Tensor):
        return data.to(device)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_device(d, device) for d in data))
    if isinstance(data, collections.abc.Mapping):
        return _same_container(data, {k: _to_device(v, device) for k, v in data.items()})
    if isinstance(data, (list, tuple)):
        return _same_container(data, [_to_device(d, device) for d in data])
    return data


# ---- DataLoader ----


def get_worker_info():
    """None: vkt's DataLoader loads every batch in the calling process."""
    return None


def _select_rows(tensors, idx):
    """The rows idx of each tensor, by index_select on its own device (the index uploaded once per device)."""
    index = {}
    for t in tensors:
        if str(t.device) not in index:
            index[str(t.device)] = _C.tensor(idx, dtype=_C.int64, device=t.device)
    return [t.index_select(0, index[str(t.device)]) for t in tensors]


def _tensor_rows(dataset):
    """For a TensorDataset or Subsets of one (unmodified __getitem__): a function from a list of indices to
    the batch default_collate would make from those samples; else None."""
    if type(dataset).__getitem__ is TensorDataset.__getitem__:
        return lambda idx: _select_rows(dataset.tensors, idx)
    if type(dataset).__getitem__ is Subset.__getitem__:
        inner = _tensor_rows(dataset.dataset)
        return inner and (lambda idx: inner([int(dataset.indices[i]) for i in idx]))
    return None


class _SingleProcessIter:
    """One pass over a DataLoader: fetches each batch, collates it and moves it to the loader's device."""

    def __init__(self, loader):
        self._loader = loader
        self._gpu = loader.device if loader.device is not None and loader.device.type == "vulkan" else None
        self._fetch = self._fetch_stream if loader._iterable else self._fetch_indices
        self._rows = _tensor_rows(loader.dataset) if loader.collate_fn is default_collate else None
        self._source = iter(loader.dataset) if loader._iterable else iter(loader._index_sampler)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _fetch_stream(self):
        loader = self._loader
        if not loader._auto_collation:
            return loader.collate_fn(next(self._source))
        batch = list(itertools.islice(self._source, loader.batch_size))
        if not batch or (loader.drop_last and len(batch) < loader.batch_size):
            raise StopIteration
        return loader.collate_fn(batch)

    def _fetch_indices(self):
        loader, index = self._loader, next(self._source)
        dataset = loader.dataset
        if not loader._auto_collation:
            return loader.collate_fn(dataset[index])
        if self._rows is not None:
            return self._rows(index)
        if callable(getattr(dataset, "__getitems__", None)):
            return loader.collate_fn(dataset.__getitems__(index))
        return loader.collate_fn([dataset[i] for i in index])

    def __next__(self):
        if self._gpu is not None:
            _C._flush(self._gpu)
        data = self._fetch()
        return data if self._loader.device is None else _to_device(data, self._loader.device)


class DataLoader:
    """Iterates over a dataset in batches, as torch.utils.data.DataLoader.

    vkt additions and differences: device= (keyword) moves each batch there as it is made, after
    handing the GPU the work recorded since the last batch, so the host makes the batch while the GPU
    runs that work; num_workers > 0 is validated as torch does but the batches are
    still made in this process (get_worker_info() is None); pin_memory has nothing to pin and is kept
    only as an attribute.
    """

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True, device=None):
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            batch_size, drop_last, sampler, batch_sampler = _samplers(
                dataset, batch_size, bool(shuffle), sampler, batch_sampler, drop_last, generator)
        if batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.pin_memory, self.pin_memory_device, self.in_order = pin_memory, pin_memory_device, in_order
        self.persistent_workers = persistent_workers
        self.device = None if device is None else _C.device(device)
        self._iterable = iterable
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, attr, val):
        if getattr(self, "_initialized", False) and attr in self._FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_size is not None if self._iterable else self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _SingleProcessIter(self)

    def __len__(self):
        if not self._iterable:
            return len(self._index_sampler)
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None and num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")


def _samplers(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
    """(batch_size, drop_last, sampler, batch_sampler) of a map-style dataset's loader, as torch settles them."""
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                             "and drop_last")
        batch_size, drop_last = None, False
    if sampler is None:
        sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
    if batch_size is not None and batch_sampler is None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    return batch_size, drop_last, sampler, batch_sampler


def _check_iterable_options(shuffle, sampler, batch_sampler):
    if shuffle not in {False, None}:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                         f"shuffle={shuffle}")
    if sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                         f"sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                         f"batch_sampler={batch_sampler}")
