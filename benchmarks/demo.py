"""make demo: the device vkt chose, and a timed round trip of a NumPy array through it."""
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
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    t0 = time.perf_counter()
    x = vkt.tensor(a, device="vulkan")
    y = x.T.contiguous()  # the strided-copy shader
    back = np.asarray(y)
    dt = time.perf_counter() - t0
    err = np.abs(back - a.T).max()
    print(f"round trip of a 1024x1024 float32 array with a transpose on the device: {dt * 1e3:.1f} ms, "
          f"max error {err}")
    print(x[:2, :4])


if __name__ == "__main__":
    main()
