"""The Burn book's "Custom WGPU Kernel" chapter in vkt: a fused matmul + bias + relu written as a GLSL
RawKernel, checked against the same math from basic ops, given a backward pass through
vkt.autograd.Function, and trained with. docs/custom_kernels.md walks through it.

    python examples/custom_kernel.py [--device vulkan] [--batch 2] [--m 33] [--k 20] [--n 17]
"""
import argparse

import numpy as np

import vkt

# 1. The kernel. Templated by element type ({{elem}}) and workgroup size ({{workgroup_size_x}}): each
# workgroup computes a tile of TILE x TILE outputs of one batch entry, staging TILE x TILE blocks of the
# operands in shared memory. lhs is [batch, m, k]; rhs [k, n] or [batch, n] is broadcast over the batch when
# its batch stride is 0, as is the bias [n] (a [1, n] or [batch, m, n] bias has strides to match).
FUSED_MATMUL_ADD_RELU = """
layout(std430, binding = 0) readonly buffer Lhs { {{elem}} lhs[]; };
layout(std430, binding = 1) readonly buffer Rhs { {{elem}} rhs[]; };
layout(std430, binding = 2) readonly buffer Bias { {{elem}} bias[]; };
layout(std430, binding = 3) writeonly buffer Out { {{elem}} outp[]; };

#define TILE {{workgroup_size_x}}
shared {{elem}} lhs_tile[TILE][TILE];
shared {{elem}} rhs_tile[TILE][TILE];

void main() {
  uint col = gl_WorkGroupID.x * TILE + gl_LocalInvocationID.x;
  uint row = gl_WorkGroupID.y * TILE + gl_LocalInvocationID.y;
  uint b = gl_WorkGroupID.z;
  {{elem}} acc = {{elem}}(0);
  for (uint k0 = 0; k0 < p.k; k0 += TILE) {
    uint lk = k0 + gl_LocalInvocationID.x, rk = k0 + gl_LocalInvocationID.y;
    lhs_tile[gl_LocalInvocationID.y][gl_LocalInvocationID.x] =
        row < p.m && lk < p.k ? lhs[b * p.lhs_batch + row * p.k + lk] : {{elem}}(0);
    rhs_tile[gl_LocalInvocationID.y][gl_LocalInvocationID.x] =
        rk < p.k && col < p.n ? rhs[b * p.rhs_batch + rk * p.n + col] : {{elem}}(0);
    barrier();
    for (uint j = 0; j < TILE; j++)
      acc += lhs_tile[gl_LocalInvocationID.y][j] * rhs_tile[j][gl_LocalInvocationID.x];
    barrier();
  }
  if (row < p.m && col < p.n) {
    {{elem}} v = acc + bias[b * p.bias_batch + row * p.bias_row + col];
    outp[(b * p.m + row) * p.n + col] = max(v, {{elem}}(0));
  }
}
"""
SIGNATURE = "uint m, uint k, uint n, uint lhs_batch, uint rhs_batch, uint bias_batch, uint bias_row"
TILE = 16

_kernels = {}


def fused_kernel(dtype, tile=TILE):
    """The kernel for one element type and tile size, made (and compiled) once."""
    key = (dtype, tile)
    if key not in _kernels:
        _kernels[key] = vkt.RawKernel(FUSED_MATMUL_ADD_RELU, template={"elem": dtype, "workgroup_size_x": tile},
                                      workgroup_size=(tile, tile, 1), signature=SIGNATURE, name="main")
    return _kernels[key]


def _batched(t, batch, trailing):
    """t (dense) broadcast over the batch: its batch stride in elements, 0 when shared by every entry."""
    return 0 if t.dim() <= trailing or t.shape[0] == 1 else t.stride(0)


def fused_matmul_add_relu(lhs, rhs, bias, tile=TILE):
    """relu(lhs @ rhs + bias) in one launch: lhs [batch, m, k]; rhs [k, n] or [batch or 1, k, n]; bias
    broadcastable to [batch, m, n] along batch and rows ([n], [m, n], [batch, m, n])."""
    batch, m, k = lhs.shape
    n = rhs.shape[-1]
    lhs, rhs, bias = lhs.contiguous(), rhs.contiguous(), bias.contiguous()
    bias_row = n if bias.dim() >= 2 and bias.shape[-2] == m and m > 1 else 0
    out = vkt.empty(batch, m, n, dtype=lhs.dtype, device=lhs.device)
    grid = ((n + tile - 1) // tile, (m + tile - 1) // tile, batch)
    fused_kernel(lhs.dtype, tile)(lhs, rhs, bias, out, m, k, n, m * k, _batched(rhs, batch, 2),
                                  _batched(bias, batch, 2), bias_row, grid=grid, outputs=(out,))
    return out


# 2. The reference: the same math from basic ops, what the kernel is tested against.
def reference(lhs, rhs, bias):
    return vkt.relu(lhs @ rhs + bias)


# 3. The backward pass, as the book's: relu's gradient from the saved output, the matmul's from the
# transposed operands, the bias's summed over the dimensions it was broadcast along (the engine does that).
class FusedMatmulAddRelu(vkt.autograd.Function):
    @staticmethod
    def forward(ctx, lhs, rhs, bias):
        out = fused_matmul_add_relu(lhs, rhs, bias)
        ctx.save_for_backward(lhs, rhs, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        lhs, rhs, out = ctx.saved_tensors
        grad = grad_out * (out > 0).to(grad_out.dtype)
        grad_lhs = grad @ rhs.transpose(-1, -2)
        grad_rhs = lhs.transpose(-1, -2) @ grad
        if rhs.dim() == 2:
            grad_rhs = grad_rhs.sum(0)
        return grad_lhs, grad_rhs, grad


def check(device="vulkan", batch=2, m=33, k=20, n=17, seed=0):
    """The kernel's forward and gradients against the reference's; returns the largest differences."""
    vkt.manual_seed(seed)
    lhs = vkt.randn(batch, m, k, device=device, requires_grad=True)
    rhs = vkt.randn(k, n, device=device, requires_grad=True)
    bias = vkt.randn(n, device=device, requires_grad=True)
    ours = FusedMatmulAddRelu.apply(lhs, rhs, bias)
    ref = reference(lhs, rhs, bias)
    gout = vkt.randn(batch, m, n, device=device)
    grads = vkt.autograd.grad(ours, (lhs, rhs, bias), gout)
    ref_grads = vkt.autograd.grad(ref, (lhs, rhs, bias), gout)
    diffs = [float(np.abs(ours.detach().cpu().numpy() - ref.detach().cpu().numpy()).max())]
    diffs += [float(np.abs(g.cpu().numpy() - r.cpu().numpy()).max()) for g, r in zip(grads, ref_grads)]
    return diffs


def train(device="vulkan", steps=20, seed=0):
    """A two-layer regression whose hidden layer is the fused kernel; returns the first and last losses."""
    vkt.manual_seed(seed)
    x = vkt.randn(4, 16, 8, device=device)
    target = (x.sum(-1, keepdim=True) * 0.5).relu()
    w1 = (vkt.randn(8, 32, device=device) * 0.3).requires_grad_()
    b1 = vkt.zeros(32, device=device, requires_grad=True)
    w2 = (vkt.randn(32, 1, device=device) * 0.3).requires_grad_()
    opt = vkt.optim.SGD([w1, b1, w2], lr=0.05)
    losses = []
    for _ in range(steps):
        hidden = FusedMatmulAddRelu.apply(x, w1, b1)
        loss = ((hidden @ w2 - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses[0], losses[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--m", type=int, default=33)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--n", type=int, default=17)
    args = parser.parse_args()
    diffs = check(args.device, args.batch, args.m, args.k, args.n)
    print("max |kernel - reference|: forward %.2e, d lhs %.2e, d rhs %.2e, d bias %.2e" % tuple(diffs))
    first, last = train(args.device)
    print(f"training with the fused kernel: loss {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
