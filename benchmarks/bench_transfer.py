"""Upload and download of 256 MiB: vkt against NumPy copies (CPU) and, with --torch where CUDA exists,
against torch's .cuda() / .cpu() in the same run.

    python benchmarks/bench_transfer.py [--torch] [--mib 256] [--repeat 10]
"""
import argparse
import time

import numpy as np

import vkt


def best_of(fn, repeat):
    fn()  # warm-up: allocator blocks, staging buffers, pipelines
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def row(name, seconds, nbytes, peer=None):
    gbs = nbytes / seconds / 1e9
    text = f"{name:<34} {seconds * 1e3:9.2f} ms {gbs:8.2f} GB/s"
    if peer is not None:
        text += f"   ratio (peer time / vkt time) {peer / seconds:5.2f}"
    print(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch", action="store_true", help="also time torch.Tensor.cuda() / .cpu()")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    n = args.mib * 2**20 // 4
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    nbytes = a.nbytes
    print(f"adapter: {vkt.vulkan.get_device_name()}  ({args.mib} MiB float32, best of {args.repeat})")

    t_np = best_of(lambda: a.copy(), args.repeat)
    row("numpy copy (host -> host)", t_np, nbytes)

    def upload():
        t = vkt.tensor(a, device="vulkan")
        vkt.vulkan.synchronize()
        return t

    t_up = best_of(upload, args.repeat)
    row("vkt upload  vkt.tensor(a, 'vulkan')", t_up, nbytes, t_np)
    dev = vkt.tensor(a, device="vulkan")
    t_down = best_of(lambda: np.asarray(dev), args.repeat)
    row("vkt download np.asarray(t)", t_down, nbytes, t_np)
    assert np.array_equal(np.asarray(dev), a)

    if args.torch:
        import torch
        if not torch.cuda.is_available():
            print("torch: CUDA not available, skipped")
            return
        def torch_up():
            t = torch.from_numpy(a).cuda()
            torch.cuda.synchronize()
            return t
        tt = torch_up()
        t_tup = best_of(torch_up, args.repeat)
        t_tdown = best_of(lambda: tt.cpu().numpy(), args.repeat)
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
        row("torch upload  from_numpy(a).cuda()", t_tup, nbytes)
        row("torch download t.cpu().numpy()", t_tdown, nbytes)
        print(f"upload ratio   torch/vkt = {t_tup / t_up:.2f}")
        print(f"download ratio torch/vkt = {t_tdown / t_down:.2f}")


if __name__ == "__main__":
    main()
