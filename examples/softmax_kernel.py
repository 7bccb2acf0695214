"""A fused softmax with a temperature, softmax(x / t) over the last dim, as one RawKernel per direction:
the forward keeps a row in registers (one workgroup a row, a shared-memory reduction for the max and the
sum), and the backward is its own kernel, dx = y * (dy - sum(dy * y)) / t. The built-in ops would take a
division, a softmax and, backward, four elementwise ops and a reduction.

    python examples/softmax_kernel.py [--device vulkan] [--rows 37] [--cols 300] [--temperature 0.7]
"""
import argparse

import numpy as np

import vkt

WORKGROUP = 64

# {{op}} picks the direction: both share the row loop and the workgroup reduction.
SOFTMAX = """
layout(std430, binding = 0) readonly buffer A { float a[]; };  // forward: x; backward: y
layout(std430, binding = 1) readonly buffer B { float b[]; };  // backward: dy (forward: unused, x again)
layout(std430, binding = 2) writeonly buffer O { float o[]; };

shared float part[WORKGROUP_SIZE_X];

// The workgroup's reduction of v: max when take_max, else the sum.
float reduce(float v, bool take_max) {
  uint t = gl_LocalInvocationID.x;
  part[t] = v;
  barrier();
  for (uint s = WORKGROUP_SIZE_X / 2; s > 0; s >>= 1) {
    if (t < s)
      part[t] = take_max ? max(part[t], part[t + s]) : part[t] + part[t + s];
    barrier();
  }
  float r = part[0];
  barrier();
  return r;
}

void main() {
  uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x, base = row * p.cols;
{{op}}
}
"""

FORWARD = """
  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint c = t; c < p.cols; c += WORKGROUP_SIZE_X)
    m = max(m, a[base + c] / p.temperature);
  m = reduce(m, true);
  float s = 0.0;
  for (uint c = t; c < p.cols; c += WORKGROUP_SIZE_X)
    s += exp(a[base + c] / p.temperature - m);
  s = reduce(s, false);
  for (uint c = t; c < p.cols; c += WORKGROUP_SIZE_X)
    o[base + c] = exp(a[base + c] / p.temperature - m) / s;
"""

BACKWARD = """
  float d = 0.0;
  for (uint c = t; c < p.cols; c += WORKGROUP_SIZE_X)
    d += a[base + c] * b[base + c];
  d = reduce(d, false);
  for (uint c = t; c < p.cols; c += WORKGROUP_SIZE_X)
    o[base + c] = a[base + c] * (b[base + c] - d) / p.temperature;
"""

SIGNATURE = "uint cols, float temperature"
forward_kernel = vkt.RawKernel(SOFTMAX, template={"op": FORWARD}, workgroup_size=(WORKGROUP, 1, 1),
                               signature=SIGNATURE)
backward_kernel = vkt.RawKernel(SOFTMAX, template={"op": BACKWARD}, workgroup_size=(WORKGROUP, 1, 1),
                                signature=SIGNATURE)


def _launch(kernel, a, b, temperature):
    a, b = a.contiguous(), b.contiguous()
    out = vkt.empty_like(a)
    cols = a.shape[-1]
    kernel(a, b, out, cols, float(temperature), grid=(a.numel() // cols, 1, 1), outputs=(out,))
    return out


class SoftmaxWithTemperature(vkt.autograd.Function):
    @staticmethod
    def forward(ctx, x, temperature):
        y = _launch(forward_kernel, x, x, temperature)
        ctx.save_for_backward(y)
        ctx.temperature = temperature
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return _launch(backward_kernel, y, dy, ctx.temperature), None


def softmax_t(x, temperature):
    return SoftmaxWithTemperature.apply(x, temperature)


def reference(x, temperature):
    return vkt.softmax(x / temperature, dim=-1)


def check(device="vulkan", rows=37, cols=300, temperature=0.7, seed=0):
    """Forward and gradient against the reference from basic ops; returns the largest differences."""
    vkt.manual_seed(seed)
    x = vkt.randn(rows, cols, device=device, requires_grad=True)
    dy = vkt.randn(rows, cols, device=device)
    ours, ref = softmax_t(x, temperature), reference(x, temperature)
    (g,) = vkt.autograd.grad(ours, (x,), dy)
    (r,) = vkt.autograd.grad(ref, (x,), dy)
    return (float(np.abs(ours.detach().cpu().numpy() - ref.detach().cpu().numpy()).max()),
            float(np.abs(g.cpu().numpy() - r.cpu().numpy()).max()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--rows", type=int, default=37)
    parser.add_argument("--cols", type=int, default=300)
    parser.add_argument("--temperature", type=float, default=0.7)
    args = parser.parse_args()
    fwd, bwd = check(args.device, args.rows, args.cols, args.temperature)
    print(f"max |kernel - reference|: forward {fwd:.2e}, gradient {bwd:.2e}")


if __name__ == "__main__":
    main()
