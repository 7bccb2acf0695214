"""The host's cost of bench.py's MLP training step (issue 19; a diagnostic, not a benchmark table): the step
(784-1024-1024-10, ReLU, CrossEntropyLoss, AdamW, zero_grad(set_to_none=True)) repeated, with the wall time and
the Python thread's CPU time per step. On lavapipe a small batch keeps the shaders' execution short; both times
still include lavapipe's own recording, and the wall its execution (no step waits: cross_entropy's check of
targets uploaded from the host reads nothing back). Exact counts come from callgrind: --callgrind runs the timed steps inside a ctypes
callback, so that only they are counted, and lavapipe's worker threads go to files of their own:
    valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no --toggle-collect=_CallPythonObject \\
        python3 benchmarks/mlp_host.py --steps 10 --callgrind
then `callgrind_annotate callgrind.out.PID-01` (thread 1, the Python thread) divided by the steps. Run once as
is and once with VKT_FUSION=0."""
import argparse
import ctypes
import os
import time

import numpy as np

import vkt

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--width", type=int, default=1024, help="the hidden layers' width (bench.py: 1024)")
parser.add_argument("--callgrind", action="store_true", help="time the steps inside a ctypes callback")
args = parser.parse_args()

rng = np.random.default_rng(0)
nn = vkt.nn
model = nn.Sequential(nn.Linear(784, args.width), nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(),
                      nn.Linear(args.width, 10)).to("vulkan")
opt = vkt.optim.AdamW(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
x = vkt.tensor(rng.standard_normal((args.batch, 784)).astype(np.float32), device="vulkan")
y = vkt.tensor(rng.integers(0, 10, args.batch), device="vulkan")


def step():
    opt.zero_grad(set_to_none=True)
    loss_fn(model(x), y).backward()
    opt.step()


def steps():
    for _ in range(args.steps):
        step()


for _ in range(5):  # compiles every kernel, makes the optimizer's state
    step()
vkt.vulkan.synchronize()
vkt.vulkan.reset_kernel_stats()
run = ctypes.CFUNCTYPE(None)(steps) if args.callgrind else steps
wall, cpu = time.perf_counter(), time.thread_time()
run()
vkt.vulkan.synchronize()
wall, cpu = (time.perf_counter() - wall) / args.steps, (time.thread_time() - cpu) / args.steps
mode = "unfused" if os.environ.get("VKT_FUSION") == "0" else "fused"
print(f"{mode} batch {args.batch} width {args.width}: {wall * 1e3:.3f} ms a step (wall), {cpu * 1e3:.3f} ms of the "
      f"Python thread's CPU, {vkt.vulkan.kernel_stats()['dispatches'] / args.steps:.1f} dispatches a step")
