"""torch.nn.utils.rnn for vkt: PackedSequence and the functions that pack, pad and unpad variable-length sequences.
Every data movement is a vkt op (narrow, reshape, cat, stack, index_select), so gradients flow through packing and
padding on either device; batch_sizes is an int64 tensor on the cpu device, read on the host to plan the ops."""
from collections.abc import Iterable
from typing import NamedTuple, Optional

from ... import (Tensor, arange, cat, empty_like, float16, float32, float64, full, int32, int64, sort, stack, tensor,
                  uint8)
from ... import bool as bool_  # renamed so the builtin bool is not shadowed here

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """A batch of variable-length sequences, time-major and without padding: data holds step 0 of every sequence,
    then step 1 of those still running, ...; batch_sizes[t] (int64, cpu) says how many rows step t has. The
    sequences are sorted longest first; sorted_indices maps that order back to the caller's batch and
    unsorted_indices is its inverse (both None when the caller's batch was already sorted). Made by
    pack_padded_sequence or pack_sequence, not by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), sorted_indices)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(*args, **kwargs), with the indices following data's device; batch_sizes stays on the cpu.
        self when data is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def follow(t):
            return t.to(data.device)
        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, follow),
                          _bind(self.unsorted_indices, follow))

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=float64)

    def float(self):
        return self.to(dtype=float32)

    def half(self):
        return self.to(dtype=float16)

    def long(self):
        return self.to(dtype=int64)

    def int(self):
        return self.to(dtype=int32)

    def byte(self):
        return self.to(dtype=uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    @property
    def is_vulkan(self):
        return self.data.is_vulkan


def invert_permutation(permutation):
    """The inverse of a 1-D permutation (None for None): out[permutation[i]] = i."""
    if permutation is None:
        return None
    return empty_like(permutation).scatter_(0, permutation, arange(permutation.numel(), device=permutation.device))


def _check_long_tensor(t):
    # torch's message names 'lengths' for batch_sizes too
    if t.dim() != 1 or t.device.type != "cpu" or t.dtype != int64:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {t.dim()}D {t.device} "
                           f"{_SCALAR_NAMES.get(t.dtype, t.dtype)} tensor")


# c10's ScalarType names, as torch's messages print them
_SCALAR_NAMES = {float32: "Float", float64: "Double", float16: "Half", int32: "Int", int64: "Long", uint8: "Byte",
                 bool_: "Bool"}


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs input (T, B, *) (or (B, T, *) with batch_first) whose column b holds a sequence of lengths[b] steps.
    With enforce_sorted the lengths must be decreasing; otherwise the batch is sorted here and the
    PackedSequence records the permutation."""
    if isinstance(lengths, Tensor):
        lengths = lengths.to(dtype=int64)
    else:
        lengths = tensor(lengths, dtype=int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = sort(lengths, descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    x = input.transpose(0, 1) if batch_first else input
    _check_long_tensor(lengths)
    batch = x.size(1)  # size(), not shape[], for torch's IndexError on 1-D input
    if lengths.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.shape[0]} "
                           f"(batch_size={batch})")
    sizes = lengths.tolist()
    if sizes[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(a < b for a, b in zip(sizes, sizes[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    # From the shortest sequence up: each longer length adds a block of steps over the first i + 1 sequences, so
    # the whole pack is one cat of a few blocks rather than one piece per step.
    blocks, batch_sizes, prev = [], [], 0
    for i in range(batch - 1, -1, -1):
        if sizes[i] > prev:
            blocks.append(x.narrow(0, prev, sizes[i] - prev).narrow(1, 0, i + 1).reshape(-1, *x.shape[2:]))
            batch_sizes += [i + 1] * (sizes[i] - prev)
            prev = sizes[i]
    data = blocks[0] if len(blocks) == 1 else cat(blocks)
    return PackedSequence(data, tensor(batch_sizes, dtype=int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded, lengths), padded (T, B, *) (or (B, T, *)) in the caller's
    original batch order, T = total_length if given, and lengths an int64 cpu tensor."""
    max_seq_length = sequence.batch_sizes.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    _check_long_tensor(sequence.batch_sizes)
    if sequence.batch_sizes.numel() == 0:
        raise RuntimeError("batch_sizes can not be empty")
    sizes = sequence.batch_sizes.tolist()
    batch, rest = sizes[0], tuple(data.shape[1:])
    kw = {"dtype": data.dtype, "device": data.device}
    # runs of steps with the same batch size are one block each: a reshape, and padding on the right
    blocks, offset, t = [], 0, 0
    while t < len(sizes):
        n = sizes[t]
        run = next((u for u in range(t, len(sizes)) if sizes[u] != n), len(sizes)) - t
        block = data.narrow(0, offset, run * n).reshape(run, n, *rest)
        if n < batch:
            block = cat([block, full((run, batch - n, *rest), padding_value, **kw)], 1)
        blocks.append(block)
        offset, t = offset + run * n, t + run
    if max_seq_length > len(sizes):
        blocks.append(full((max_seq_length - len(sizes), batch, *rest), padding_value, **kw))
    padded = blocks[0] if len(blocks) == 1 else cat(blocks)
    lengths = [sum(1 for n in sizes if n > b) for b in range(batch)]
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices.cpu().tolist()
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in order]
    return padded, tensor(lengths, dtype=int64)


def _fit(seq, shape, dtype):
    """seq as torch's copy_ writes it into a slot of this shape: cast, broadcast, or torch's error."""
    for d in range(1, min(len(shape), seq.dim()) + 1):
        a, b = shape[-d], seq.shape[-d]
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                               f"non-singleton dimension {max(len(shape), seq.dim()) - d}")
    seq = seq.to(dtype=dtype)
    return seq if tuple(seq.shape) == tuple(shape) else seq.expand(*shape)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences (each (L_i, *)) into (T, B, *) (or (B, T, *)), T the longest L_i, filling the rest with
    padding_value on padding_side; trailing dims and dtype are sequences[0]'s."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for seq in sequences:
        length = seq.shape[0]
        seq = _fit(seq, (length, *trailing), first.dtype)
        if length < max_len:
            pad = full((max_len - length, *trailing), padding_value, dtype=first.dtype, device=first.device)
            seq = cat([seq, pad] if padding_side == "right" else [pad, seq])
        padded.append(seq)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences in padded_sequences (T, B, *) (or (B, T, *)): sequence b is its first lengths[b]
    steps. Unlike torch, padded_sequences is not transposed in place, and the sequences are views of it."""
    sequences = padded_sequences.unbind(0 if batch_first else 1)
    return [seq.narrow(0, 0, int(length)) for seq, length in zip(sequences, lengths, strict=True)]


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence(pad_sequence(sequences), their lengths, enforce_sorted=enforce_sorted)."""
    lengths = tensor([v.shape[0] for v in sequences], dtype=int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences in a PackedSequence, in the caller's original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
