# The shader cache under $XDG_CACHE_HOME/vkt: SPIR-V keyed by source, defines and adapter, and the
# pipeline cache. A corrupt or unwritable cache is ignored, never fatal.
from conftest import run_python

CODE = ("import numpy as np, vkt; x = vkt.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4), device='vulkan'); "
        "y = (x.T.contiguous() * 2).relu(); assert np.array_equal(np.asarray(y), np.arange(12.0).reshape(3, 4).T * 2); "
        "print('ok', vkt.vulkan.cache_dir())")


def test_cache_is_written_and_reused(dev, tmp_path):
    r = run_python(CODE, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
    spirv = list((tmp_path / "vkt" / "spirv").iterdir())
    assert spirv and all(f.suffix == ".spv" for f in spirv)
    assert list((tmp_path / "vkt").glob("pipelines-*.bin"))
    r = run_python(CODE, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr


def test_corrupt_cache_is_ignored(dev, tmp_path):
    assert run_python(CODE, env={"XDG_CACHE_HOME": str(tmp_path)}).returncode == 0
    for i, f in enumerate(sorted((tmp_path / "vkt").rglob("*.*"))):
        data = f.read_bytes()
        # truncated, flipped, emptied: each file a different kind of damage
        f.write_bytes([data[: len(data) // 2], bytes(b ^ 0x5A for b in data), b""][i % 3])
    r = run_python(CODE, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr


def test_unwritable_cache_is_ignored(dev):
    # Nothing can be created under /proc, not even by root (CI runs as root, so permissions would not do).
    r = run_python(CODE, env={"XDG_CACHE_HOME": "/proc/vkt-cannot-exist"})
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
