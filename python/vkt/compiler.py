"""vkt.compile and vkt.compiler: torch.compile's entry points with torch's arguments and checks. Each returns the
function or module it is given: vkt has no graph to capture, because it already does what a compiler would, as ops
are recorded (DESIGN.md, "Fusion")."""

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "reset"]

# torch._inductor.list_mode_options()'s modes, in its order (its error lists them so).
_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# torch._dynamo's registered backends (list_backends(exclude_tags=()), less its *_TESTING_ONLY ones).
_BACKENDS = ("aot_eager", "aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
             "aot_eager_decomp_partition_with_mode", "aot_eager_default_partitioner", "aot_ts", "cudagraphs",
             "dynamo_accuracy_minifier_backend", "dynamo_minifier_backend", "eager", "eager_debug", "eager_noexcept",
             "inductor", "invoke_subgraph", "openxla", "openxla_eval", "pre_dispatch_eager", "ts", "tvm")


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """torch.compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, ...):
    returns `model` itself; with model=None, a decorator that does the same (`@vkt.compile` and
    `@vkt.compile(mode=...)` both work).

    Why the identity: what torch.compile buys on a GPU is fewer kernel launches and fewer round trips through
    memory, by fusing elementwise chains and folding them into matmul epilogues. vkt does that on its own, eagerly:
    on a Vulkan device an elementwise op is recorded as a pending expression, the whole pending chain becomes one
    generated kernel when its value is needed, and a matmul's bias, activation, scale or cast become its epilogue;
    nothing waits until a value is read. A compiled model would run the same kernels, so there is nothing to compile.

    The arguments are checked as torch checks them: RuntimeError for mode together with options, for a backend name
    torch does not know, and (for the inductor backend, the default) for a mode other than "default", "lite",
    "reduce-overhead", "max-autotune-no-cudagraphs" or "max-autotune". options' keys (inductor's configuration
    names) are taken without a check; fullgraph, dynamic, name, disable and the recompile settings change nothing.
    """
    if model is None:
        def fn(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           name=name, disable=disable, recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return fn
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if backend is None:
        backend = "inductor"
    if backend == "inductor":
        if mode and mode not in _MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    elif isinstance(backend, str) and backend not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, see `torch._dynamo.list_backends()` for available "
                           "backends.")
    return model


def disable(fn=None, recursive=True, *, reason=None):
    """torch.compiler.disable: returns fn (there is no compiled region to leave); with fn=None, a decorator."""
    if fn is None:
        def decorator(fn):
            return disable(fn, recursive, reason=reason)
        return decorator
    return fn


def is_compiling():
    """False: vkt never traces a function, so no code runs under a compiler."""
    return False


def is_dynamo_compiling():
    """False, as is_compiling()."""
    return False


def is_exporting():
    """False: there is no export."""
    return False


def reset():
    """Nothing to clear: vkt.compile caches nothing (vkt's fused kernels are cached by the device, not here)."""
