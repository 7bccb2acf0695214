# The layout of a new elementwise result, against PyTorch's (TensorIterator): contiguous, channels-last or the
# operands' own strides where none is broadcast and all agree (dims of one element included), else dense in the order
# of the operands' strides. Random views of random shapes with dims of one element, one to three operands, broadcast.
import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")


def view(base, steps):
    """base through the steps: ('permute', order), ('slice', dim) (every other element along dim)."""
    x = base
    for step in steps:
        if step[0] == "permute":
            x = x.permute(*step[1])
        else:
            x = x[(slice(None),) * step[1] + (slice(None, None, 2),)]
    return x


def random_case(rng, shape):
    """The shape of a contiguous tensor and the steps that view it as `shape`, or as a shape that broadcasts to it
    (dims of one element, a missing leading dim)."""
    nd = len(shape)
    mine = [s if rng.random() < 0.7 else 1 for s in shape]  # some dims broadcast
    if rng.random() < 0.2 and nd > 1:
        mine = mine[1:]  # a missing leading dim
    order = [int(o) for o in rng.permutation(len(mine))]
    base_shape = [0] * len(mine)  # permute(order) of it has shape `mine`
    for k, o in enumerate(order):
        base_shape[o] = mine[k]
    steps = [("permute", tuple(order))]
    if rng.random() < 0.3 and len(mine):
        d = int(rng.integers(len(mine)))
        if mine[d] > 1:
            steps.append(("slice", d))
            base_shape[order[d]] = mine[d] * 2
    return base_shape, steps


@pytest.mark.parametrize("seed", range(12))
def test_result_strides_match_torch(device, seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        nd = int(rng.integers(1, 5))
        shape = [int(rng.choice([1, 1, 2, 3, 4])) for _ in range(nd)]
        nops = int(rng.integers(1, 4))
        cases = [random_case(rng, shape) for _ in range(nops)]
        ops = []
        for base_shape, steps in cases:
            n = int(np.prod(base_shape)) if base_shape else 1
            t = torch.arange(float(n)).reshape(base_shape)
            x = vkt.arange(float(n), device=device).reshape(base_shape)
            ops.append((view(t, steps), view(x, steps)))
        tt, vv = [o[0] for o in ops], [o[1] for o in ops]
        if nops == 1:
            calls = [lambda m, a: m.neg(a), lambda m, a: a * 2, lambda m, a: a > 1, lambda m, a: m.clamp(a, 1, 3)]
        elif nops == 2:
            calls = [lambda m, a, b: a + b, lambda m, a, b: m.maximum(a, b), lambda m, a, b: a < b]
        else:
            calls = [lambda m, a, b, c: m.where(a > 1, b, c)]
        for call in calls:
            want, got = call(torch, *tt), call(vkt, *vv)
            assert tuple(got.shape) == tuple(want.shape)
            assert got.stride() == want.stride(), ([(tuple(t.shape), t.stride()) for t in tt], got.stride(),
                                                   want.stride())
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
