# No Vulkan at all: with the loader hidden (VKT_VULKAN_LIBRARY=/nonexistent), `import vkt` works,
# vkt.vulkan.is_available() is False with a reason, and the cpu share of the suite passes.
import os
import re

import vkt
from conftest import run_python

TESTS = os.path.dirname(os.path.abspath(__file__))
CPU_SHARE = ["test_ops.py", "test_reduce.py", "test_matmul.py", "test_shape.py", "test_views.py",
             "test_errors.py", "test_creation.py", "test_roundtrip.py"]
NO_LOADER = {"VKT_VULKAN_LIBRARY": "/nonexistent", "VKT_VALIDATION": None}


def test_import_without_loader():
    r = run_python("import vkt; print(vkt.vulkan.is_available()); print(vkt.vulkan.unavailable_reason());"
                   "print(vkt.ones(2, 3).sum().item())", env=NO_LOADER)
    assert r.returncode == 0, r.stderr
    available, reason, total = r.stdout.strip().splitlines()
    assert available == "False"
    assert "/nonexistent" in reason
    assert total == "6.0"


def test_cpu_share_of_the_suite_without_loader():
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cpu or not vulkan", "--rootdir", TESTS,
            *[os.path.join(TESTS, f) for f in CPU_SHARE]]
    r = run_python(None, args=args, env=NO_LOADER, timeout=300)
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed > 1000, summary
    assert not re.search(r"\d+ (failed|errors?)\b", summary), summary  # "15 xfailed" is expected
    assert vkt.__file__  # the subprocess imported the same vkt (run_python puts it first on the path)


def test_user_kernels_without_loader():
    """A RawKernel on the cpu device: a RuntimeError, or its cpu= function where given."""
    r = run_python(
        "import vkt\n"
        "k = vkt.RawKernel('void main() {}', cpu=lambda t, n: t.add_(n))\n"
        "t = vkt.zeros(3); k(t, 2, grid=1); print(t.tolist())\n"
        "try:\n    vkt.RawKernel('void main() {}')(t, grid=1)\n"
        "except RuntimeError as e:\n    print('RuntimeError', 'cpu=' in str(e))\n", env=NO_LOADER)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[2.0, 2.0, 2.0]", "RuntimeError True"]
