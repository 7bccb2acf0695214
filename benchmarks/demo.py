"""make demo: the fused matmul + bias + relu of the Burn book on the best adapter, against its NumPy
reference, with the error and the time; then the device choice and a transposed round trip."""
import time

import numpy as np

import vkt


def main():
    if not vkt.vulkan.is_available():
        print("Vulkan is not available:", vkt.vulkan.unavailable_reason())
        return
    i = vkt.vulkan.current_device()
    p = vkt.vulkan.get_device_properties(i)
    print(f"device: vulkan:{i} {p.name} ({p.type}, Vulkan {p.api_version}) - {vkt.vulkan.choice_reason()}")

    # The seed's shapes: lhs [1, M, K] broadcast against rhs [B, K, N], bias [B, M, N].
    rng = np.random.default_rng(0)
    b, m, k, n = 8, 256, 512, 384
    lhs = rng.standard_normal((1, m, k), dtype=np.float32)
    rhs = rng.standard_normal((b, k, n), dtype=np.float32)
    bias = rng.standard_normal((b, m, n), dtype=np.float32)
    x, w, c = (vkt.tensor(a, device="vulkan") for a in (lhs, rhs, bias))
    y = vkt.matmul_add_relu(x, w, c)  # compile and warm up
    vkt.vulkan.synchronize()
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        y = vkt.matmul_add_relu(x, w, c)
    vkt.vulkan.synchronize()
    dt = (time.perf_counter() - t0) / reps
    ref = np.maximum(lhs.astype(np.float64) @ rhs.astype(np.float64) + bias, 0)
    err = np.abs(np.asarray(y) - ref).max()
    composed = np.abs(np.asarray(vkt.matmul_add_relu_reference(x, w, c)) - ref).max()
    print(f"matmul_add_relu {list(lhs.shape)} @ {list(rhs.shape)} + {list(bias.shape)}: "
          f"{dt * 1e3:.3f} ms ({2 * b * m * n * k / dt / 1e9:.1f} GFLOP/s), "
          f"max |error| vs float64 NumPy {err:.2e} (the composed reference: {composed:.2e})")
    print("CPU fallbacks taken:", vkt.vulkan.fallback_stats() or "none")

    a = rng.standard_normal((1024, 1024), dtype=np.float32)
    t0 = time.perf_counter()
    back = np.asarray(vkt.tensor(a, device="vulkan").T.contiguous())
    print(f"1024x1024 round trip with a transpose on the device: {(time.perf_counter() - t0) * 1e3:.1f} ms, "
          f"exact: {np.array_equal(back, a.T)}")


if __name__ == "__main__":
    main()
