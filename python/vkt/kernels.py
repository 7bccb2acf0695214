"""User kernels: GLSL compute shaders written in Python strings, launched on vkt's tensors.

``RawKernel`` is a whole compute shader (vkt prepends the header); ``ElementwiseKernel`` is one statement
per element over broadcast inputs, CuPy's style. Both compile through vkt's pipeline cache (in memory and
on disk, keyed by the full source and the adapter) and record into the current batch like a built-in op.
docs/custom_kernels.md teaches them.
"""
import re
import struct

from . import _C

__all__ = ["ElementwiseKernel", "KernelCompileError", "RawKernel"]


class KernelCompileError(RuntimeError):
    """A kernel's GLSL does not compile; the message holds glslang's log, with the user's line numbers."""


# GLSL storage type of each dtype, for template values and ElementwiseKernel's placeholders.
_GLSL_TYPES = {"float32": "float", "float64": "double", "float16": "float16_t", "int32": "int", "int64": "int64_t"}
# Scalar types of a signature= push block, each 4 bytes (std430), as struct codes.
_PUSH_CODES = {"int": "i", "uint": "I", "float": "f", "bool": "I"}
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _substitute(source, template):
    """Fills each {{key}} of source from template; a key missing or unused is a ValueError."""
    template = dict(template or {})
    used = set(_PLACEHOLDER.findall(source))
    missing = sorted(used - set(template))
    if missing:
        raise ValueError(f"template keys used in the source but not given: {', '.join(missing)}")
    unused = sorted(set(template) - used)
    if unused:
        raise ValueError(f"template keys given but not used in the source: {', '.join(unused)}")

    def value(match):
        v = template[match.group(1)]
        if isinstance(v, _C.dtype):
            return _GLSL_TYPES[_dtype_name(v)]
        return str(v)

    return _PLACEHOLDER.sub(value, source)


def _parse_signature(signature):
    """'uint n, float alpha' -> [('uint', 'n'), ('float', 'alpha')]."""
    params = []
    for part in filter(None, (p.strip() for p in signature.split(","))):
        words = part.split()
        if len(words) != 2 or words[0] not in _PUSH_CODES or not words[1].isidentifier():
            raise ValueError(f"signature: {part!r} is not '<type> <name>' with a type of {', '.join(_PUSH_CODES)}")
        params.append((words[0], words[1]))
    return params


def _workgroup(size):
    size = (size,) if isinstance(size, int) else tuple(size)
    if not 1 <= len(size) <= 3 or not all(isinstance(s, int) and s >= 1 for s in size):
        raise ValueError(f"workgroup_size must be 1 to 3 positive ints, got {size!r}")
    return size + (1,) * (3 - len(size))


def _grid(grid):
    grid = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(grid) <= 3 or not all(isinstance(g, int) and not isinstance(g, bool) for g in grid):
        raise TypeError(f"grid must be an int or 1 to 3 ints, got {grid!r}")
    if any(g < 1 for g in grid):
        raise ValueError(f"grid must be positive in every dimension, got {grid!r}")
    return grid + (1,) * (3 - len(grid))


def _header(limits, nbuffers, push_size, workgroup, defines):
    lines = ["#version 450"]
    for feature, ext in (("int64", "GL_EXT_shader_explicit_arithmetic_types_int64"),
                         ("float16", "GL_EXT_shader_explicit_arithmetic_types_float16"),
                         ("float16", "GL_EXT_shader_16bit_storage"),
                         ("int8_storage", "GL_EXT_shader_8bit_storage"),
                         ("subgroup_arithmetic", "GL_KHR_shader_subgroup_arithmetic")):
        if limits[feature]:
            lines.append(f"#extension {ext} : enable")
    # the layout is part of the source, so the pipeline cache keys it
    lines.append(f"// vkt: {nbuffers} storage buffers, {push_size} bytes of push constants")
    for axis, size in zip("XYZ", workgroup):
        lines.append(f"#define WORKGROUP_SIZE_{axis} {size}")
    lines += [f"#define {k} {v}" for k, v in (defines or {}).items()]
    lines.append("layout(local_size_x = %d, local_size_y = %d, local_size_z = %d) in;" % workgroup)
    return lines


def _device_of(tensors, what):
    devices = {str(t.device) for t in tensors}
    if len(devices) > 1:
        a, b = sorted(devices)[:2]
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!")
    if not devices:
        raise ValueError(f"{what} needs at least one tensor argument")
    return tensors[0].device


def _on_vulkan(device):
    return device.type == "vulkan" and _C._is_available()


class RawKernel:
    """A GLSL compute shader launched over vkt tensors.

    ``source`` is GLSL without ``#version``: vkt prepends ``#version 450``, ``#extension`` lines for what the
    adapter has (64-bit ints, float16, 8-bit storage, subgroup arithmetic), ``#define WORKGROUP_SIZE_X/Y/Z``,
    each of ``defines`` as ``#define KEY VALUE``, ``layout(local_size_x = ..., ...) in;`` from
    ``workgroup_size`` and, given ``signature`` (``"uint n, float alpha"``), the push-constant block
    ``layout(push_constant) uniform vkt_push { uint n; float alpha; } p;``. Without ``signature`` the source
    declares its own block, in which the scalars lie in call order, 4 bytes each (an int as ``int``, or
    ``uint`` past 2**31 - 1, a float as ``float``). Compile errors name the lines of ``source``.
    ``template`` fills ``{{key}}`` placeholders first (a dtype value becomes its GLSL type). ``name`` is the
    entry function (vkt adds a ``main`` calling it when it is not ``main``).

    ``kernel(*args, grid=(gx, gy, gz), outputs=None)`` runs ``grid`` workgroups. Tensor arguments bind in
    order to ``layout(binding = 0..n-1) buffer``: the kernel sees a tensor's storage from the view's first
    element (``x[0]`` is ``t[0, ..., 0]``), laid out by ``t.stride()`` (pass strides and sizes as ints where
    the kernel needs them; ``t.contiguous()`` gives a dense one). ``outputs`` (tensors or argument indices)
    are the tensors the kernel writes; without it every tensor is taken as written. Ints and floats go to
    the push block in order. The launch is asynchronous, like a built-in op. On the cpu device ``cpu``,
    when given, is called with the arguments instead; else it is a RuntimeError.
    """

    def __init__(self, source, *, name="main", template=None, workgroup_size=(64, 1, 1), defines=None,
                 signature=None, cpu=None):
        if not isinstance(source, str):
            raise TypeError(f"RawKernel source must be a str, got {type(source).__name__}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"RawKernel name must be a GLSL identifier, got {name!r}")
        self.name = name
        self.source = _substitute(source, template)
        self.workgroup_size = _workgroup(workgroup_size)
        self.defines = dict(defines or {})
        self.signature = _parse_signature(signature) if signature is not None else None
        self.cpu = cpu
        self._codes = "".join(_PUSH_CODES[t] for t, _ in self.signature) if self.signature is not None else None
        self._pipelines = {}  # (device index, tensors, push bytes) -> pipeline

    def full_source(self, device, nbuffers, push_size):
        """The GLSL vkt compiles for this launch layout: the header, then the user's lines from line 1."""
        limits = _C._kernel_limits(device)
        lines = _header(limits, nbuffers, push_size, self.workgroup_size, self.defines)
        if self.signature:
            fields = " ".join(f"{t} {n};" for t, n in self.signature)
            lines.append(f"layout(push_constant) uniform vkt_push {{ {fields} }} p;")
        lines += ["#line 1", self.source]
        if self.name != "main":
            lines.append(f"void main() {{ {self.name}(); }}")
        return "\n".join(lines) + "\n"

    def _pipeline(self, device, nbuffers, push_size):
        key = (device, nbuffers, push_size)
        pipe = self._pipelines.get(key)
        if pipe is None:
            limits = _C._kernel_limits(device)
            size = self.workgroup_size
            if any(s > m for s, m in zip(size, limits["max_workgroup_size"])) or \
                    size[0] * size[1] * size[2] > limits["max_workgroup_invocations"]:
                raise ValueError(f"workgroup_size {size} is over the adapter's {limits['max_workgroup_size']}, "
                                 f"{limits['max_workgroup_invocations']} invocations in all")
            pipe = _C._kernel_compile(device, self.full_source(device, nbuffers, push_size), nbuffers, push_size)
            if isinstance(pipe, str):
                raise KernelCompileError(f"kernel {self.name!r} does not compile:\n{pipe.rstrip()}")
            self._pipelines[key] = pipe
        return pipe

    def _push(self, scalars):
        if self.signature is None:
            codes = "".join("f" if isinstance(v, float) else "I" if isinstance(v, int) and v > 2**31 - 1 else "i"
                            for v in scalars)
        else:
            if len(scalars) != len(self.signature):
                raise TypeError(f"kernel {self.name!r} takes {len(self.signature)} scalar arguments "
                                f"({', '.join(n for _, n in self.signature)}), got {len(scalars)}")
            codes = "".join(_PUSH_CODES[t] for t, _ in self.signature)
            for (t, n), v in zip(self.signature, scalars):
                if t != "float" and isinstance(v, float):
                    raise TypeError(f"kernel {self.name!r}: scalar {n} is {t}, got a float")
        try:
            return struct.pack("<" + codes, *scalars)
        except struct.error as e:
            raise OverflowError(f"kernel {self.name!r}: a scalar does not fit its 32-bit push constant: {e}") from None

    def _writes(self, args, tensors, outputs):
        if outputs is None:
            return (1 << len(tensors)) - 1
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        mask = 0
        for o in outputs:
            if isinstance(o, int) and not isinstance(o, bool):
                if not 0 <= o < len(args) or not isinstance(args[o], _C.Tensor):
                    raise ValueError(f"outputs: argument {o} is not a tensor argument")
                o = args[o]
            hits = [k for k, t in enumerate(tensors) if t is o]
            if not hits:
                raise ValueError("outputs must name tensor arguments of this call (or their indices)")
            mask |= 1 << hits[0]
        return mask

    def __call__(self, *args, grid, outputs=None):
        # the common case in one C call; anything it does not take (a first launch, the cpu device, a bad
        # argument) comes back NotImplemented for the checks below
        if _C._kernel_call(self._pipelines, args, grid, outputs, self._codes) is NotImplemented:
            self._checked_call(args, grid, outputs)

    def _checked_call(self, args, grid, outputs):
        tensors, scalars = [], []
        for i, a in enumerate(args):
            if isinstance(a, _C.Tensor):
                tensors.append(a)
            elif isinstance(a, (int, float)):
                scalars.append(a)
            else:
                raise TypeError(f"kernel {self.name!r}: argument {i} is a {type(a).__name__}; "
                                "expected a Tensor, an int or a float")
        device = _device_of(tensors, f"kernel {self.name!r}")
        if not _on_vulkan(device):
            if self.cpu is None:
                raise RuntimeError(f"kernel {self.name!r} runs on a Vulkan device; its tensors are on {device} "
                                   "(give RawKernel a cpu= function to run there)")
            return self.cpu(*args)
        grid = _grid(grid)
        push = self._push(scalars)
        writes = self._writes(args, tensors, outputs)
        index = device.index if device.index is not None else _C._current_device()
        pipe = self._pipeline(index, len(tensors), len(push))
        _C._kernel_launch(pipe, tuple(tensors), writes, push, grid)


def _parse_params(params, what):
    out = []
    for part in filter(None, (p.strip() for p in params.split(","))):
        words = part.split()
        if len(words) != 2 or not words[0].isidentifier() or not words[1].isidentifier():
            raise ValueError(f"{what}: {part!r} is not '<type> <name>'")
        out.append((words[0], words[1]))
    if not out:
        raise ValueError(f"{what} names no parameter")
    return out


def _broadcast(shapes):
    ndim = max(len(s) for s in shapes)
    out = []
    for d in range(ndim):
        sizes = {s[d - ndim + len(s)] for s in shapes if d - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise RuntimeError(f"shapes {', '.join(str(list(s)) for s in shapes)} cannot be broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


class ElementwiseKernel:
    """One GLSL statement per element, in the style of CuPy's ElementwiseKernel.

    ``ElementwiseKernel("T x, T y", "T z", "z = x * y + 1", "fma1")``: typed parameters, a type being a
    GLSL scalar type (``float``, ``double``, ``int``, ``int64_t``, ``float16_t``) or a placeholder (any
    other identifier, e.g. ``T``) bound to the dtype of the first input that uses it. Called with the inputs
    (tensors, or Python scalars taking their placeholder's dtype), it returns the outputs (one tensor, or a
    tuple), new tensors of the inputs' broadcast shape. The inputs may have any strides; the kernel runs on
    shaders/elementwise.glsl's indexing, so ``i`` is the element's index in the output and ``p`` is taken.
    """

    def __init__(self, in_params, out_params, operation, name="kernel"):
        self.inputs = _parse_params(in_params, "in_params")
        self.outputs = _parse_params(out_params, "out_params")
        names = [n for _, n in self.inputs + self.outputs]
        if len(set(names)) != len(names):
            raise ValueError(f"ElementwiseKernel {name!r}: a parameter name is repeated")
        if len(names) > 8:
            raise ValueError(f"ElementwiseKernel {name!r} has {len(names)} parameters, more than 8")
        self.operation = operation
        self.name = name
        self._pipelines = {}  # (device index, dtype names) -> pipeline

    def _types(self, args):
        bound = {}
        for (t, n), a in zip(self.inputs, args):
            if t in _GLSL_TYPES.values() or not isinstance(a, _C.Tensor):
                continue
            have = _dtype_name(a.dtype)
            if bound.setdefault(t, have) != have:
                raise TypeError(f"ElementwiseKernel {self.name!r}: {n} is {have} but {t} is {bound[t]}")
        by_glsl = {v: k for k, v in _GLSL_TYPES.items()}
        dtypes = []
        for t, n in self.inputs + self.outputs:
            d = by_glsl.get(t) or bound.get(t)
            if d is None:
                raise TypeError(f"ElementwiseKernel {self.name!r}: the type {t} of {n} is bound by no tensor input")
            if d not in _GLSL_TYPES:
                raise TypeError(f"ElementwiseKernel {self.name!r}: {n} is {d}; kernels take "
                                f"{', '.join(_GLSL_TYPES)}")
            dtypes.append(d)
        return dtypes

    def source(self, dtypes):
        """The GLSL of the kernel for these dtypes (inputs', then outputs'), over elementwise.glsl."""
        params = self.inputs + self.outputs
        nin, n = len(self.inputs), len(params)
        order = list(range(nin, n)) + list(range(nin))  # outputs are operands 0.. as elementwise.glsl has them
        lines = ["#version 450", f"#define MAX_OPS {n}", "#define NPARAMS 1", "#define C_INT", "#define C int",
                 '#include "elementwise.glsl"']
        placeholders = {t: _GLSL_TYPES[d] for (t, _), d in zip(params, dtypes) if t not in _GLSL_TYPES.values()}
        lines += [f"#define {t} {glsl}" for t, glsl in placeholders.items()]
        for b, k in enumerate(order):
            (_, name), glsl = params[k], _GLSL_TYPES[dtypes[k]]
            access = "" if k >= nin else "readonly "
            lines.append(f"layout(std430, binding = {b}) {access}buffer vkt_b{b} {{ {glsl} {name}_vkt[]; }};")
        lines += ["void main() {", "  uint i = element(0);", "  if (i >= p.n)", "    return;",
                  "  uint idx[MAX_OPS];", "  locate(i, MAX_OPS, idx);"]
        for b, k in enumerate(order):
            (_, name), glsl = params[k], _GLSL_TYPES[dtypes[k]]
            lines.append(f"  {glsl} {name}" + (f" = {name}_vkt[idx[{b}]];" if k < nin else ";"))
        lines += ["#line 1", self.operation + ";"]
        lines += [f"  {params[k][1]}_vkt[idx[{b}]] = {params[k][1]};" for b, k in enumerate(order) if k >= nin]
        return "\n".join(lines + ["}"]) + "\n"

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise TypeError(f"ElementwiseKernel {self.name!r} takes {len(self.inputs)} inputs, got {len(args)}")
        for (_, n), a in zip(self.inputs, args):
            if not isinstance(a, (_C.Tensor, int, float)):
                raise TypeError(f"ElementwiseKernel {self.name!r}: {n} is a {type(a).__name__}; "
                                "expected a Tensor, an int or a float")
        tensors = [a for a in args if isinstance(a, _C.Tensor)]
        device = _device_of(tensors, f"ElementwiseKernel {self.name!r}")
        if not _on_vulkan(device):
            raise RuntimeError(f"ElementwiseKernel {self.name!r} runs on a Vulkan device; its tensors are on {device}")
        dtypes = self._types(args)
        nin = len(self.inputs)
        dtype_of = {name: getattr(_C, name) for name in _GLSL_TYPES}
        inputs = [a if isinstance(a, _C.Tensor) else _C.tensor(a, dtype=dtype_of[d], device=device)
                  for a, d in zip(args, dtypes)]
        shape = _broadcast([tuple(t.shape) for t in inputs])
        outs = [_C.empty(shape, dtype=dtype_of[d], device=device) for d in dtypes[nin:]]
        index = device.index if device.index is not None else _C._current_device()
        key = (index, tuple(dtypes))
        pipe = self._pipelines.get(key)
        if pipe is None:
            push = _C._kernel_elementwise_push_size(len(dtypes))
            pipe = _C._kernel_compile(index, self.source(dtypes), len(dtypes), push)
            if isinstance(pipe, str):
                raise KernelCompileError(f"ElementwiseKernel {self.name!r} does not compile:\n{pipe.rstrip()}")
            self._pipelines[key] = pipe
        operands = outs + [t.expand(*shape) for t in inputs]
        _C._kernel_launch_elementwise(pipe, tuple(operands), len(outs))
        return outs[0] if len(outs) == 1 else tuple(outs)
