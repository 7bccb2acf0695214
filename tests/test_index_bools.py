# Bools in an index key (Python's True/False and 0-d bool tensors), against torch 2.13 on the CPU: torch takes each
# as a new dim indexed by [0] or [], so the result is a copy (never a view of the indexed tensor) and its dims go
# where the key's other advanced indices put theirs. Reads, writes and gradients, on each device.
import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")

KEYS = [
    ("true", lambda m: True),
    ("false", lambda m: False),
    ("tensor_true", lambda m: m.tensor(True)),
    ("true_int", lambda m: (True, 1)),
    ("int_true", lambda m: (1, True)),
    ("true_index", lambda m: (True, m.tensor([0, 1]))),
    ("index_true", lambda m: (m.tensor([1, 0]), True)),
    ("slice_true", lambda m: (slice(None), True)),
    ("true_slice_true", lambda m: (True, slice(None), True)),
    ("true_int_true", lambda m: (True, 1, True)),
    ("ellipsis_true", lambda m: (Ellipsis, True)),
    ("false_index", lambda m: (False, m.tensor([0]))),
]


@pytest.mark.parametrize("name,key", KEYS, ids=[k[0] for k in KEYS])
def test_bool_key_reads_a_copy(name, key, device):
    base = np.arange(6.0).reshape(2, 3)
    x, t = vkt.tensor(base, device=device), torch.tensor(base)
    got, want = x[key(vkt)], t[key(torch)]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    got.zero_()  # a copy: the indexed tensor keeps its values, as torch's
    np.testing.assert_array_equal(x.cpu().numpy(), base)


@pytest.mark.parametrize("name,key", KEYS, ids=[k[0] for k in KEYS])
def test_bool_key_writes_and_gradients(name, key, device):
    x, t = vkt.zeros(2, 3, device=device), torch.zeros(2, 3)
    x[key(vkt)] = 7.0
    t[key(torch)] = 7.0
    np.testing.assert_array_equal(x.cpu().numpy(), t.numpy())
    x = vkt.arange(6.0, device=device).reshape(2, 3).requires_grad_(True)
    t = torch.arange(6.0).reshape(2, 3).requires_grad_(True)
    y, z = x[key(vkt)], t[key(torch)]
    w = np.arange(1.0, 1.0 + z.numel()).reshape(tuple(z.shape))
    (y * vkt.tensor(w, dtype=vkt.float32, device=device)).sum().backward()
    (z * torch.tensor(w, dtype=torch.float32)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())


def test_zero_dim_mask_is_a_copy(device):
    """The autograd fuzzing's case: a 0-d tensor masked by itself, then zeroed in place."""
    x = vkt.tensor(0.25, device=device)
    y = x[x > 0]
    y.zero_()
    assert x.item() == 0.25 and y.tolist() == [0.0]
