"""vkt.autograd: reverse-mode automatic differentiation with PyTorch's API.

The graph is recorded and walked in C (csrc/autograd/); this module holds what takes Python objects:
backward() and grad() argument handling, the grad-mode context managers, tensor hooks' handles,
autograd.Function (users' own ops with a backward) and gradcheck.
"""
import functools
import threading
import warnings

from . import _C

__all__ = [
    "backward", "grad", "Function", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
    "set_grad_enabled", "is_grad_enabled", "inference_mode", "detect_anomaly", "set_detect_anomaly", "graph",
]

is_grad_enabled = _C.is_grad_enabled


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, _C.Tensor):
        return (x,)
    return tuple(x)


def _grads_for(tensors, grad_tensors):
    if grad_tensors is None:
        return (None,) * len(tensors)
    grads = _as_tuple(grad_tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"Mismatch in number of gradients: expected {len(tensors)}, got {len(grads)}")
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Sums the gradients of tensors (given grad_tensors where they are not scalars) into the .grad of
    the leaves they depend on (or of inputs only, where given)."""
    tensors = _as_tuple(tensors)
    grads = _grads_for(tensors, grad_tensors)
    keep = create_graph if retain_graph is None else retain_graph
    inputs = _as_tuple(inputs)
    _C._run_backward(tensors, grads, bool(keep), bool(create_graph), inputs, False, True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned (not accumulated into .grad). With
    is_grads_batched, each grad_output's first dim is a batch of them: one backward pass per row (PyTorch vmaps
    it), the results stacked along a first dim."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grads = _grads_for(outputs, grad_outputs)
    keep = create_graph if retain_graph is None else retain_graph
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grads, keep, create_graph, allow_unused, materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    result = _C._run_backward(outputs, grads, bool(keep), bool(create_graph), inputs, bool(allow_unused), False)
    if materialize_grads:
        result = tuple(_C.zeros_like(x) if g is None else g for x, g in zip(inputs, result))
    return result


def _grad_batched(outputs, inputs, grads, keep, create_graph, allow_unused, materialize_grads):
    if any(g is None or g.dim() == 0 for g in grads):
        raise ValueError("vkt.autograd.grad: is_grads_batched=True needs each grad_output with a first, batch dim")
    for i, (g, o) in enumerate(zip(grads, outputs)):
        if tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of {g.shape[1:]}"
                f" and output[{i}] has a shape of {o.shape}. If you only want some tensors in "
                "`grad_output` to be considered batched, consider using vmap.")
    n = grads[0].shape[0]
    if n == 0:  # PyTorch's vmap raises IndexError here too
        raise IndexError("vkt.autograd.grad: is_grads_batched=True with a batch of 0 grad_outputs")
    unused = materialize_grads if allow_unused is None else allow_unused
    rows = [grad(outputs, inputs, tuple(g[k] for g in grads), retain_graph=keep or k < n - 1,
                 create_graph=create_graph, allow_unused=unused) for k in range(n)]
    result = tuple(None if not rows or rows[0][j] is None else _C.stack([r[j] for r in rows])
                   for j in range(len(inputs)))
    if materialize_grads:
        result = tuple(_C.zeros_like(x) if g is None else g for x, g in zip(inputs, result))
    return result


def _with_requires_grad(create):
    """A creation function taking requires_grad=, as PyTorch's all do."""

    @functools.wraps(create)
    def wrapped(*args, requires_grad=False, **kwargs):
        t = create(*args, **kwargs)
        return t.requires_grad_() if requires_grad else t
    return wrapped


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph, inputs)


class RemovableHandle:
    """What a tensor's or a node's register_hook returns: remove() takes the hook off again (owner._remove_hook
    for a node, _C._remove_hook for a tensor)."""

    def __init__(self, owner, hook_id):
        self._owner, self.id = owner, hook_id

    def remove(self):
        if self._owner is not None:
            if isinstance(self._owner, _C.Tensor):
                _C._remove_hook(self._owner, self.id)
            else:
                self._owner._remove_hook(self.id)
            self._owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _tensor_register_hook(self, hook):
    if not callable(hook):
        raise TypeError(f"register_hook expects a callable, not {type(hook).__name__}")
    return RemovableHandle(self, _C._add_hook(self, hook))


def _node_register_prehook(self, fn):
    """fn(grad_outputs) runs before this node's backward; a tuple it returns replaces grad_outputs."""
    return RemovableHandle(self, self._add_hook(fn, False))


def _node_register_hook(self, fn):
    """fn(grad_inputs, grad_outputs) runs after this node's backward; a tuple it returns replaces grad_inputs."""
    return RemovableHandle(self, self._add_hook(fn, True))


_C.Node.register_prehook = _node_register_prehook
_C.Node.register_hook = _node_register_hook


def _tensor_register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) runs after backward() has added into this leaf's .grad (an optimizer step in the backward)."""
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook expects a callable, not {type(hook).__name__}")
    return RemovableHandle(self, _C._add_hook(self, hook, True))


# ---- grad mode ----

class _GradMode:
    """A context manager and decorator that sets grad mode for the calling thread and restores it."""

    def _mode(self):
        raise NotImplementedError

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode())

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapped

    def _args(self):
        return ()

    def clone(self):
        return self.__class__(*self._args())


class no_grad(_GradMode):
    """Ops inside record no graph (for evaluation and parameter updates)."""

    def _mode(self):
        return False


class enable_grad(_GradMode):
    """Ops inside record the graph, even within no_grad."""

    def _mode(self):
        return True


class set_grad_enabled(_GradMode):
    """set_grad_enabled(mode): sets grad mode now, and restores the previous mode when used with `with`."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self.mode)

    def _mode(self):
        return self.mode

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        _C._set_grad_enabled(self.mode)  # _prev is the mode before the constructor set this one

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # as a decorator it sets the mode only while fn runs
        return super().__call__(fn)


class inference_mode(_GradMode):
    """inference_mode(mode=True): no graph is recorded inside, as in no_grad, and the tensors made inside are
    inference tensors (is_inference()); inference_mode(False) turns it off within one."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def _mode(self):
        return not self.mode  # inference_mode(False) turns grad mode on, even within no_grad, as PyTorch's

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        self._prev_inference = _C.is_inference_mode_enabled()
        _C._set_inference_mode(self.mode)
        super().__enter__()

    def __exit__(self, *exc):
        _C._set_inference_mode(self._prev_inference)
        return super().__exit__(*exc)


# ---- anomaly mode ----

class detect_anomaly:
    """detect_anomaly(check_nan=True): a context manager under which a failing backward warns with
    the stack of the forward call that made the failing node, and (check_nan) a backward returning NaN raises.
    Each node then keeps its stack, and the NaN check reads every gradient back: for debugging only."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._prev = (_C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled())
        _C.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C.set_anomaly_enabled(*self._prev)
        return False


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): anomaly detection on or off now, and back as it was at the end
    of a `with` block."""

    def __init__(self, mode, check_nan=True):
        self._prev = (_C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled())
        _C.set_anomaly_enabled(bool(mode), bool(check_nan))

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C.set_anomaly_enabled(*self._prev)
        return False


# ---- vkt.autograd.graph: saved-tensor hooks ----

_saved_hooks = threading.local()  # per thread, as PyTorch's: .stack of (pack, unpack), .disabled (a message)


def _hooks_stack():
    if not hasattr(_saved_hooks, "stack"):
        _saved_hooks.stack, _saved_hooks.disabled = [], None
    return _saved_hooks.stack


def _current_hooks():
    stack = _hooks_stack()
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """saved_tensors_hooks(pack_hook, unpack_hook): inside, each tensor an op saves for its backward goes to
    pack_hook(tensor), whose result the graph keeps instead of the tensor; backward gets the tensor back from
    unpack_hook(that). Per thread; nested blocks use the innermost pair."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        stack = _hooks_stack()
        if _saved_hooks.disabled is not None:
            raise RuntimeError(_saved_hooks.disabled)
        stack.append((self.pack_hook, self.unpack_hook))
        _C._set_saved_hooks(stack[-1])
        return self

    def __exit__(self, *exc):
        stack = _hooks_stack()
        stack.pop()
        _C._set_saved_hooks(stack[-1] if stack else None)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors go to host memory and come back to their device in backward: a model's activations then
    hold no device memory between its forward and backward. pin_memory and device_type are PyTorch's (vkt's host
    copies need no pinning)."""

    def __init__(self, pin_memory=False, device_type="vulkan"):
        def pack(tensor):
            return tensor.device, _C.empty(tuple(tensor.shape), dtype=tensor.dtype).copy_(tensor)

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """disable_saved_tensors_hooks(error_message): saved-tensor hooks raise RuntimeError(error_message) inside."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if _hooks_stack():
            raise RuntimeError(self.error_message)
        self._prev, _saved_hooks.disabled = _saved_hooks.disabled, self.error_message
        return self

    def __exit__(self, *exc):
        _saved_hooks.disabled = self._prev
        return False


# ---- vkt.autograd.graph: hooks on several tensors ----

class _MultiHandle(RemovableHandle):
    """The handle of a hook made of one hook per tensor: remove() takes them all off."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for handle in self.handles:
            handle.remove()


def _grad_fn_or_grad_acc(t):
    """The node t's gradient reaches first: its grad_fn, or a leaf's AccumulateGrad."""
    if t.requires_grad and t.grad_fn is None:
        with enable_grad():
            node = t.view_as(t).grad_fn.next_functions[0][0]
    else:
        node = t.grad_fn
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """fn runs once per backward pass that reaches the tensors, as PyTorch's. mode "all": after the gradients of
    every tensor the pass computes (those it does not reach or need for its inputs= are not waited for),
    fn(grads) with None for the others; "any": fn(grad) with the first of them. Returns a handle whose remove()
    takes the hook off."""
    modes = ("all", "any")
    if mode not in modes:
        raise ValueError(f"Expects mode to be one of {modes} but got {mode}")
    lock = threading.Lock()
    if mode == "any":
        ran = {}  # backward pass id -> whether fn ran in it

        @functools.wraps(fn)
        def first(grad):
            with lock:
                task = _C._current_graph_task_id()
                done, ran[task] = ran.get(task, False), True
            if not done:
                fn(grad)

        return _MultiHandle(t.register_hook(first) for t in tensors if t.requires_grad)
    nodes = [_grad_fn_or_grad_acc(t) for t in tensors]
    count, expected, buffer = {}, {}, {}  # per backward pass id: hooks run, hooks to wait for, gradients

    def hook_of(i):
        def hook(grad):
            task = _C._current_graph_task_id()
            with lock:
                seen = count.get(task, 0)
                count[task] = seen + 1
                if seen == 0:  # the first: how many of the tensors this pass reaches
                    expected[task] = sum(map(_C._will_engine_execute_node, nodes))
                    buffer[task] = [None] * len(nodes)
                buffer[task][i] = grad
                last = seen == expected[task] - 1
                grads = buffer.pop(task) if last else None
                if last:
                    del count[task], expected[task]
            if last:
                fn(grads)
        return hook

    return _MultiHandle(t.register_hook(hook_of(i)) for i, t in enumerate(tensors))


class _GraphModule:
    """vkt.autograd.graph: the names torch.autograd.graph has that vkt has."""

    Node = _C.Node
    saved_tensors_hooks = saved_tensors_hooks
    save_on_cpu = save_on_cpu
    disable_saved_tensors_hooks = disable_saved_tensors_hooks
    register_multi_grad_hook = staticmethod(register_multi_grad_hook)


graph = _GraphModule()


# ---- autograd.Function ----

class FunctionCtx:
    """The ctx a Function's forward and backward share."""

    def __init__(self):
        self._saved = ()
        self._originals = ()
        self._inputs_of = {}
        self._versions = ()
        self._non_differentiable = ()
        self._dirty = ()
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        hooks = _current_hooks()
        if hooks is not None:  # the hooks keep what pack_hook returns; saved_tensors unpacks it
            self._packed = tuple((hooks[1], hooks[0](t)) if isinstance(t, _C.Tensor) else (None, t) for t in tensors)
            self._saved = self._originals = self._versions = ()
            return
        self._saved = tuple(t.detach() if isinstance(t, _C.Tensor) else t for t in tensors)
        self._versions = tuple(t._version if isinstance(t, _C.Tensor) else None for t in tensors)
        self._originals = tensors

    @property
    def saved_tensors(self):
        if getattr(self, "_packed", None) is not None and self._saved is not None:
            return tuple(unpack(p) if unpack is not None else p for unpack, p in self._packed)
        if self._saved is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Specify retain_graph=True if you need to backward through the graph "
                "a second time or if you need to access saved tensors after calling backward.")
        for t, v in zip(self._saved, self._versions):
            if isinstance(t, _C.Tensor) and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: saved tensor is at version {t._version}; expected version {v} instead.")
        return tuple(self._inputs_of.get(id(o), s) if isinstance(s, _C.Tensor) else s
                     for o, s in zip(self._originals, self._saved))

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = self._non_differentiable + tensors

    def mark_dirty(self, *tensors):
        """Inputs the forward modified in place (and returns): they take this op's history."""
        self._dirty = self._dirty + tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """A user's op with its own backward, as torch.autograd.Function:

        class Exp(vkt.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

        y = Exp.apply(x)
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """With a forward that takes no ctx (forward(*args)), saves what backward needs: PyTorch's newer style."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        separate = getattr(cls.setup_context, "__func__", cls.setup_context) is not \
            getattr(Function.setup_context, "__func__", Function.setup_context)
        with no_grad():
            out = cls.forward(*args, **kwargs) if separate else cls.forward(ctx, *args, **kwargs)
            if separate:
                cls.setup_context(ctx, args, out)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        # Saved inputs keep their autograd identity, so create_graph can differentiate through backward.
        ctx._inputs_of = {id(a): a for a in args if isinstance(a, _C.Tensor)}
        nondiff = tuple(any(o is n for n in ctx._non_differentiable) for o in outs)
        dirty = tuple(any(o is d for d in ctx._dirty) for o in outs)
        tensors = tuple(a for a in args if isinstance(a, _C.Tensor))
        positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]

        def run_backward(ctx, *grads):
            result = cls.backward(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(result)})")
            return tuple(result[i] for i in positions)

        name = getattr(cls, "_node_name", cls.__name__ + "Backward")
        recorded = _C._function_record(name, run_backward, ctx, tensors, outs, nondiff, dirty, ctx.materialize_grads)
        return recorded[0] if single else recorded


class _OnceDifferentiable(Function):
    """Passes the gradients of a @once_differentiable backward on, and refuses to be differentiated."""

    @staticmethod
    def forward(ctx, name, *grads):
        ctx.name = name
        return tuple(g.clone() for g in grads)

    @staticmethod
    def backward(ctx, *unused):
        raise RuntimeError(f"trying to differentiate twice a function that was marked with @once_differentiable "
                           f"({ctx.name})")


class _NoDerivative(Function):
    """Outputs that require grad where an input does, as torch's, and a backward that raises torch's error: the node
    torch records for an op whose derivative is not implemented."""

    _node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, name, outputs, *inputs):
        ctx.name = name
        ctx.mark_non_differentiable(*(o for o in outputs if not o.is_floating_point()))
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.name} is not implemented")


def _no_derivative(name, outputs, *inputs):
    """outputs (a tuple) of aten::name on inputs as they are, or through _NoDerivative where grad mode is on and an
    input requires grad."""
    if not is_grad_enabled() or not any(isinstance(t, _C.Tensor) and t.requires_grad for t in inputs):
        return outputs
    return _NoDerivative.apply(name, tuple(outputs), *inputs)


class _FunctionModule:
    """vkt.autograd.function: once_differentiable, and the names torch.autograd.function has."""

    Function = Function
    FunctionCtx = FunctionCtx

    @staticmethod
    def once_differentiable(backward):
        """A Function's backward that is not itself differentiable: it runs without recording, and a second
        derivative through it raises (torch.autograd.function.once_differentiable)."""
        @functools.wraps(backward)
        def wrapper(ctx, *grads):
            with no_grad():
                result = backward(ctx, *grads)
            if not is_grad_enabled() or not any(isinstance(g, _C.Tensor) and g.requires_grad for g in grads):
                return result
            single = not isinstance(result, tuple)
            items = (result,) if single else result
            # leaves that require grad stand for them, so that the guard's outputs have a grad_fn (as PyTorch does)
            tensors = [r.detach().requires_grad_() for r in items if isinstance(r, _C.Tensor)]
            guarded = iter(_OnceDifferentiable.apply(backward.__qualname__, *tensors) if tensors else ())
            items = tuple(next(guarded) if isinstance(r, _C.Tensor) else r for r in items)
            return items[0] if single else items
        return wrapper


function = _FunctionModule()


# ---- gradcheck ----

def _flat(t):
    return t.detach().cpu().numpy().astype("float64").reshape(-1)


def _numerical_jacobian(fn, inputs, k, eps):
    """Columns d out / d inputs[k][j] by central differences, for every output, in float64."""
    import numpy as np

    x = inputs[k]
    base = x.detach().cpu().numpy().astype("float64")
    cols = []
    for j in range(base.size):
        vals = []
        for sign in (1, -1):
            shifted = base.copy().reshape(-1)
            shifted[j] += sign * eps
            xs = _C.tensor(shifted.reshape(base.shape), dtype=x.dtype, device=x.device)
            xs.requires_grad_(x.requires_grad)  # fn may differentiate inside (gradgradcheck's does)
            args = list(inputs)
            args[k] = xs
            outs = _outputs(fn(*args))
            vals.append(np.concatenate([_flat(o) for o in outs]) if outs else np.zeros(0))
        cols.append((vals[0] - vals[1]) / (2 * eps))
    n_out = sum(o.numel() for o in _outputs(fn(*inputs)))
    return np.stack(cols, axis=1) if cols else np.zeros((n_out, 0))


def _outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, _C.Tensor) and o.dtype.is_floating_point]


def _analytical_jacobian(fn, inputs, diff):
    import numpy as np

    outs = _outputs(fn(*inputs))
    sizes = [o.numel() for o in outs]
    rows = []
    for oi, o in enumerate(outs):
        for j in range(sizes[oi]):
            seed = np.zeros(sizes[oi])
            seed[j] = 1
            g = _C.tensor(seed.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
            if not o.requires_grad:
                rows.append([np.zeros(inputs[k].numel()) for k in diff])
                continue
            gs = grad((o,), [inputs[k] for k in diff], (g,), retain_graph=True, allow_unused=True)
            rows.append([np.zeros(inputs[k].numel()) if gi is None else _flat(gi) for k, gi in zip(diff, gs)])
    return [np.stack([r[i] for r in rows]) if rows else np.zeros((0, inputs[k].numel()))
            for i, k in enumerate(diff)]


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **unused):
    """Compares the gradients backward computes for func at inputs with central finite differences
    (use float64 inputs). Returns True, or raises GradcheckError (a RuntimeError) naming the worst entry."""
    import numpy as np

    inputs = _as_tuple(inputs)
    diff = [k for k, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    analytical = _analytical_jacobian(func, inputs, diff)
    for i, k in enumerate(diff):
        numerical = _numerical_jacobian(func, inputs, k, eps)
        a = analytical[i]
        if a.shape != numerical.shape or not np.allclose(a, numerical, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            worst = np.unravel_index(np.argmax(np.abs(a - numerical)), a.shape) if a.size else ()
            raise GradcheckError(
                f"Jacobian mismatch for output 0 with respect to input {k},\n"
                f"numerical:{numerical}\nanalytical:{a}\nworst entry {worst}")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **unused):
    """gradcheck of the gradients themselves: checks the backward of func's backward (create_graph)."""
    import numpy as np

    inputs = _as_tuple(inputs)
    outs = _outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _C.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=o.device, requires_grad=True)
            for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    diff = [x for x in inputs if isinstance(x, _C.Tensor) and x.requires_grad]

    def first_grads(*args):
        xs, gos = args[:len(inputs)], args[len(inputs):]
        outs = _outputs(func(*xs))
        wanted = [x for x in xs if isinstance(x, _C.Tensor) and x.requires_grad]
        gs = grad(outs, wanted, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    del diff
    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class GradcheckError(RuntimeError):
    """gradcheck found analytical and numerical gradients apart."""



from . import _autograd_functional as functional  # noqa: E402  (vkt.autograd.functional)
