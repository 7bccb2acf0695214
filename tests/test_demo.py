# The demo (examples/digits.py) in a fast configuration: the digits network learns on the best adapter
# with no CPU fallback, and on the cpu device; a reproducibility check of manual_seed over a whole run.
import os
import sys

import pytest

import vkt

pytest.importorskip("sklearn")  # a test and demo dependency; the GPU machine may lack it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import digits  # noqa: E402

DEVICES = ["cpu"] + (["vulkan"] if vkt.vulkan.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_digits_cnn_learns(device):
    acc, per_epoch, fallbacks = digits.train(device, epochs=3, progress=False)
    assert acc >= 0.93
    assert fallbacks == {}


def test_digits_mlp_is_reproducible():
    runs = [digits.train("cpu", epochs=1, model="mlp", progress=False)[0] for _ in range(2)]
    assert runs[0] == runs[1] and runs[0] >= 0.8
