"""Disassembles the machine code that NVIDIA's Vulkan driver made of vkt's shaders, for reading what a shader
variant costs (see RESULTS.md, eighth session):

    python benchmarks/sass.py [CACHE] [--out DIR] [--nvdisasm PATH]

CACHE is a pipeline cache that vkt saved on an NVIDIA adapter (default: the newest pipelines-10de-*.bin
under $XDG_CACHE_HOME/vkt or ~/.cache/vkt); copy it off the GPU machine through $OUT. Each pipeline's code
goes to DIR/pipeline-N.sass, and a line per pipeline gives its code size (VKT_PIPELINE_STATS=1 prints the
same "Binary Size" beside each shader's defines, which tells them apart) and its most frequent instructions.

Needs `pip install zstandard nvidia-cuda-nvdisasm` (nvdisasm runs on any x86-64 Linux, no GPU needed). The
cache layout is the driver's own and undocumented; what this reads held for driver 580 on an H100: zstd
frames, each an "NVDANVVM" object whose code size and offset are the 32-bit words at 0x4c and 0x50, the
code starting 8 bytes past that offset.
"""
import argparse
import collections
import glob
import os
import re
import struct
import subprocess
import sys
import tempfile

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
OBJECT_MAGIC = b"NVDANVVM"
OPCODE = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+(?:\.[A-Z0-9_]+)*)", re.M)


def default_cache():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    found = sorted(glob.glob(os.path.join(base, "vkt", "pipelines-10de-*.bin")), key=os.path.getmtime)
    if not found:
        sys.exit(f"no NVIDIA pipeline cache under {base}/vkt: run vkt on the GPU machine first")
    return found[-1]


def default_nvdisasm():
    try:
        import nvidia
    except ImportError:
        sys.exit("nvdisasm not found: pip install nvidia-cuda-nvdisasm, or pass --nvdisasm")
    for root in nvidia.__path__:
        found = glob.glob(os.path.join(root, "*", "bin", "nvdisasm"))
        if found:
            return found[0]
    sys.exit("nvdisasm not found in the nvidia package: pass --nvdisasm")


def code_objects(blob):
    """The machine code of each pipeline in a cache blob."""
    import zstandard
    for start in (m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), blob)):
        try:
            obj = zstandard.ZstdDecompressor().decompressobj().decompress(blob[start:])
        except zstandard.ZstdError:
            continue
        if obj.startswith(OBJECT_MAGIC):
            size, offset = struct.unpack_from("<II", obj, 0x4C)
            yield obj[offset + 8:offset + 8 + size]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", nargs="?")
    ap.add_argument("--out", default="sass")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--arch", default="SM90", help="nvdisasm's -b value (SM90 for an H100)")
    args = ap.parse_args()
    blob = open(args.cache or default_cache(), "rb").read()
    nvdisasm = args.nvdisasm or default_nvdisasm()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.NamedTemporaryFile(suffix=".bin") as raw:
        for i, code in enumerate(code_objects(blob)):
            raw.seek(0), raw.truncate(), raw.write(code), raw.flush()
            text = subprocess.run([nvdisasm, "-b", args.arch, raw.name], capture_output=True, text=True,
                                  check=True).stdout
            path = os.path.join(args.out, f"pipeline-{i}.sass")
            with open(path, "w") as f:
                f.write(text)
            ops = collections.Counter(OPCODE.findall(text))
            print(f"{path}: {len(code)} bytes; " + ", ".join(f"{op} {n}" for op, n in ops.most_common(10)))


if __name__ == "__main__":
    main()
