"""python -m vkt: the adapters vkt sees, the one it chose and why, and where it caches shaders."""
from . import vulkan


def main():
    if not vulkan.is_available():
        print("Vulkan: not available:", vulkan.unavailable_reason())
        print("vkt runs on the cpu device only.")
    else:
        current = vulkan.current_device() if _has_choice() else None
        print("Vulkan adapters, best first:")
        for i in range(vulkan.device_count()):
            p = vulkan.get_device_properties(i)
            mark = "*" if i == current else " "
            print(f" {mark} vulkan:{i}  {p.name}  [{p.type}, Vulkan {p.api_version}, "
                  f"{p.total_memory / 2**30:.1f} GiB, subgroup {p.subgroup_size}, "
                  f"max binding {p.max_storage_buffer_range / 2**20:.0f} MiB, "
                  f"float64 {'yes' if p.shader_float64 else 'no'}, "
                  f"float16 {'yes' if p.shader_float16 else 'no'}, "
                  f"cooperative matrix {'yes' if p.cooperative_matrix else 'no'}]")
            print(f"              driver: {p.driver}")
        print("chosen:", f"vulkan:{current}" if current is not None else "none", "-", vulkan.choice_reason())
        print("validation layer:", "on" if vulkan.validation_enabled() else "off (VKT_VALIDATION=1 turns it on)")
    print("shader cache:", vulkan.cache_dir())


def _has_choice():
    try:
        vulkan.current_device()
        return True
    except RuntimeError:
        return False


main()
