"""vkt.func: torch.func's function transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap) and
module tooling (functional_call, stack_module_state).

All are built on vkt's reverse-mode autograd: jvp takes two backward passes, jacfwd is jacrev (one backward pass per
output element), and vmap runs the function once per batch element and stacks the results (no batching rules).
"""
import functools
from collections.abc import Sequence

from . import _C
from .nn.utils.stateless import _functional_call
from .random import _all_states, _set_all_states, _vmap_randomness_mode

__all__ = ["functional_call", "stack_module_state", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd",
           "hessian", "vmap"]

# How many grad-like transforms are running: inside one, results must stay differentiable for the outer one
# even where no argument requires grad (the outer one may differentiate through a closure).
_depth = 0


# -- pytrees of tuples, lists and dicts; anything else is a leaf --------------------------------------------------

def _tree_flatten(tree):
    """(leaves, spec): spec is None for a leaf, else (type, keys or length, child specs)."""
    if isinstance(tree, (tuple, list)):
        parts = [_tree_flatten(t) for t in tree]
        return [leaf for p in parts for leaf in p[0]], (type(tree), len(tree), tuple(p[1] for p in parts))
    if isinstance(tree, dict):
        parts = [_tree_flatten(t) for t in tree.values()]
        return [leaf for p in parts for leaf in p[0]], (dict, tuple(tree), tuple(p[1] for p in parts))
    return [tree], None


def _tree_unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, keys, children = s
        values = [build(c) for c in children]
        if kind is dict:
            return dict(zip(keys, values))
        return kind(*values) if hasattr(kind, "_fields") else kind(values)  # a namedtuple takes its fields
    return build(spec)


def _num_leaves(spec):
    return 1 if spec is None else sum(_num_leaves(c) for c in spec[2])


def _broadcast_prefix(prefix, spec):
    """prefix's leaves, each repeated over the subtree of spec it stands for; None if prefix is no prefix of spec."""
    if not isinstance(prefix, (tuple, list, dict)):
        return [prefix] * _num_leaves(spec)
    if spec is None or type(prefix) is not spec[0] or len(prefix) != len(spec[2]):
        return None
    kind, keys, children = spec
    if kind is dict and set(prefix) != set(keys):
        return None
    out = []
    for i, child in enumerate(children):
        sub = _broadcast_prefix(prefix[keys[i]] if kind is dict else prefix[i], child)
        if sub is None:
            return None
        out.extend(sub)
    return out


# -- reverse mode shared by grad, vjp and jacrev ---------------------------------------------------------------

def _check_argnums(argnums, num_args):
    """argnums as non-negative ints (an int or a tuple of them), with torch's errors."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")

    def wrap(a):
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if -num_args <= a < num_args:
            return a % num_args
        raise RuntimeError(f"Got argnum={a}, but only {num_args} positional inputs")
    if isinstance(argnums, int):
        return wrap(argnums)
    argnums = tuple(wrap(a) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return argnums


def _differentiable(x):
    """A fresh input to differentiate with respect to; still in the caller's graph where x requires grad."""
    if not isinstance(x, _C.Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_()


def _autograd_grad(outputs, inputs, grad_outputs, create_graph, retain_graph=None):
    """torch.func's autograd.grad: outputs that do not require grad are skipped, missing gradients are zeros."""
    from .autograd import grad as autograd_grad
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(_C.zeros_like(x) for x in inputs)
    grads = autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=True)
    return tuple(_C.zeros_like(x) if g is None else g for g, x in zip(grads, inputs))


class _Trace:
    """func(*args) run with grad on and the arguments at argnums (None: all) made differentiable.

    keep says whether results stay in the caller's graph: inside another transform, or where an argument
    requires grad; otherwise they are detached, as torch.func returns tensors of no outer level."""

    def __init__(self, func, args, kwargs, argnums, has_aux, api):
        global _depth
        from .autograd import enable_grad
        self.keep = _depth > 0 or any(isinstance(x, _C.Tensor) and x.requires_grad
                                      for x in _tree_flatten((args, kwargs))[0])
        if argnums is None:
            diff = args
        else:
            argnums = _check_argnums(argnums, len(args))
            diff = args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)
        leaves, self.in_spec = _tree_flatten(diff)
        self.inputs = [_differentiable(x) for x in leaves]
        diff = _tree_unflatten(self.inputs, self.in_spec)
        if argnums is None:
            args = diff
        elif isinstance(argnums, int):
            args = args[:argnums] + (diff,) + args[argnums + 1:]
        else:
            args = tuple(diff[argnums.index(i)] if i in argnums else a for i, a in enumerate(args))
        _depth += 1
        try:
            with enable_grad():
                out = func(*args, **kwargs)
        finally:
            _depth -= 1
        self.aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
            out, self.aux = out
            leaves, spec = _tree_flatten(self.aux)
            self.aux = _tree_unflatten([self.detach(x) for x in leaves], spec)
        self.out = out

    def detach(self, x):
        return x if self.keep or not isinstance(x, _C.Tensor) else x.detach()

    def flat_grads(self, outputs, grad_outputs, create_graph, retain_graph=True, inputs=None):
        global _depth
        from .autograd import enable_grad
        _depth += 1
        try:
            with enable_grad():
                return _autograd_grad(outputs, self.inputs if inputs is None else inputs, grad_outputs, create_graph,
                                      retain_graph)
        finally:
            _depth -= 1

    def grads(self, outputs, grad_outputs, create_graph=None, retain_graph=True):
        """The gradients of outputs with grad_outputs, in the structure of the differentiated arguments."""
        create_graph = self.keep if create_graph is None else create_graph
        grads = self.flat_grads(outputs, grad_outputs, create_graph, retain_graph)
        return _tree_unflatten([self.detach(g) for g in grads], self.in_spec)


# -- the transforms -------------------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func's scalar output with respect to the arguments at argnums, that
    output); with has_aux, func returns (output, aux) and the function (gradient, (output, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        trace = _Trace(func, args, kwargs, argnums, has_aux, "grad_and_value(f)(*args)")
        out = trace.out
        if not isinstance(out, _C.Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        g = trace.grads([out], [_C.ones_like(out)], retain_graph=None)
        out = trace.detach(out)
        return (g, (out, trace.aux)) if has_aux else (g, out)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func's scalar output with respect to the arguments at argnums (an int
    or a tuple; each argument a tensor or a tuple/list/dict of them); with has_aux, (gradient, aux)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = grad_and_value(func, argnums, has_aux)(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def _check_outputs(leaves, api):
    if len(leaves) == 0 or (len(leaves) == 1 and leaves[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {leaves})")
    for o in leaves:
        if not isinstance(o, _C.Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def _vjp(func, primals, argnums, has_aux):
    trace = _Trace(func, primals, {}, argnums, has_aux, "vjp(f, *primals)")
    outs, out_spec = _tree_flatten(trace.out)
    _check_outputs(outs, "vjp(f, *primals)")
    for o in outs:
        if not o.is_floating_point():
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype {o.dtype}")
    return trace, outs, out_spec


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) where vjp_fn(cotangents) is the tuple of vector-Jacobian products with each
    primal; with has_aux, func returns (output, aux) and vjp gives (output, vjp_fn, aux)."""
    trace, outs, out_spec = _vjp(func, primals, None, has_aux)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat, spec = _tree_flatten(cotangents)
        if spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {_spec_str(spec)}, primal output: {_spec_str(out_spec)}")
        return trace.grads(outs, flat, create_graph, retain_graph)

    out = _tree_unflatten([trace.detach(o) for o in outs], out_spec)
    return (out, vjp_fn, trace.aux) if has_aux else (out, vjp_fn)


def _spec_str(spec):
    if spec is None:
        return "*"
    kind, keys, children = spec
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {_spec_str(c)}" for k, c in zip(keys, children)) + "}"
    items = ", ".join(_spec_str(c) for c in children)
    return f"({items}{',' if len(children) == 1 else ''})" if kind is tuple else f"[{items}]"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the Jacobian-vector product with tangents): computed in reverse mode twice (J^T u for a
    dummy u, then the derivative of its dot with the tangents with respect to u), so it costs two backward passes."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = _tree_flatten(primals)
    flat_t, t_spec = _tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, if "
                           f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{_spec_str(p_spec)} and tangents with structure {_spec_str(t_spec)}")
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if len(flat) == 0:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, _C.Tensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")
    trace = _Trace(func, primals, {}, None, has_aux, api)
    outs, out_spec = _tree_flatten(trace.out)
    _check_outputs(outs, api)
    if strict and not any(o.requires_grad for o in outs):
        raise RuntimeError(f"{api} (strict=True): The output of f is independent of the inputs. This is not allowed "
                           "with strict=True.")
    # u -> J^T u is linear, so the derivative of (J^T u) . t with respect to u is J t, whatever u is.
    us = [_C.zeros_like(o).requires_grad_() for o in outs]
    vjps = trace.flat_grads(outs, us, create_graph=True)
    pairs = [(g, t) for g, t in zip(vjps, flat_t) if g.requires_grad]
    jv = trace.flat_grads([g for g, _ in pairs], [t.to(g.dtype) for g, t in pairs], trace.keep, None, us)
    out = _tree_unflatten([trace.detach(o) for o in outs], out_spec)
    jv = _tree_unflatten([trace.detach(t) for t in jv], out_spec)
    return (out, jv, trace.aux) if has_aux else (out, jv)


def jacrev(func, argnums=0, has_aux=False, chunk_size=None):
    """A function returning the Jacobian of func with respect to the arguments at argnums: for each output an
    output.shape + input.shape tensor, one backward pass per output element (chunk_size changes nothing)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        trace, outs, out_spec = _vjp(func, args, argnums, has_aux)
        per_output = []
        for o in outs:
            flat = o.reshape(-1)
            rows = [_tree_flatten(trace.grads([flat[j]], [_C.ones_like(flat[j])]))[0] for j in range(flat.numel())]
            blocks = []
            for k, x in enumerate(trace.inputs):
                shape = tuple(o.shape) + tuple(x.shape)
                blocks.append(_C.stack([r[k] for r in rows]).reshape(shape) if rows else
                              _C.zeros(shape, dtype=x.dtype, device=x.device))
            jac = _tree_unflatten(blocks, trace.in_spec)
            per_output.append(jac)
        jac = _tree_unflatten(per_output, out_spec)
        return (jac, trace.aux) if has_aux else jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """jacrev's Jacobian (the same layout, output.shape + input.shape): vkt has no forward mode, so this is computed
    in reverse mode, one backward pass per output element."""
    _check_randomness(randomness)
    return jacrev(func, argnums, has_aux)


def hessian(func, argnums=0):
    """A function returning the Hessian of func with respect to the arguments at argnums: jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dimension of its inputs (in_dims: an int, or per argument an int, None or a nested tuple)
    with the results stacked at out_dims.

    vkt has no batching rules: func runs once per batch element on that element's slices, and the results are
    stacked, so anything func does works batched (grad, nested vmap) but costs batch-size calls. chunk_size changes
    nothing. randomness says what a random draw inside func does: 'error' raises, 'different' draws anew for each
    element, 'same' gives every element the same values (vkt's streams are put back to where they stood before each
    element's call; a vkt.Generator passed to the draw is not)."""
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        flat_args, args_spec, flat_in_dims, size = _batched_inputs(func, in_dims, args)
        results = []
        start = _all_states() if randomness == "same" else None
        with _vmap_randomness_mode(randomness):
            for i in range(size):
                if start is not None:
                    _set_all_states(start)
                sliced = [x if d is None else x.select(d, i) for x, d in zip(flat_args, flat_in_dims)]
                results.append(func(*_tree_unflatten(sliced, args_spec), **kwargs))
        return _stack_outputs(func, results, out_dims)
    return wrapper


def _batched_inputs(func, in_dims, args):
    """(args' leaves, their spec, each leaf's in_dim, the batch size), with torch's errors."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = _tree_flatten(args)
    flat_in_dims = _broadcast_prefix(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {_spec_str(_tree_flatten(in_dims)[1])} but "
                         f"inputs has structure {_spec_str(args_spec)}.")
    where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    for i, (x, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either an integer dimension or "
                             "None.")
        if not isinstance(x, _C.Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot vmap "
                             "over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.dim() <= d < x.dim():
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
        flat_in_dims[i] = d % x.dim()
    sizes = [x.shape[d] for x, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes[0] == 0:
        # With no element to run func on there is no output to take a shape from.
        raise ValueError("vkt.func.vmap: a batch of size 0 is not supported (func runs once per batch element)")
    return flat_args, args_spec, flat_in_dims, sizes[0]


def _stack_outputs(func, results, out_dims):
    """The per-element outputs stacked at out_dims (None: the first element's output, unbatched)."""
    name = _name(func)
    flat0, spec = _tree_flatten(results[0])
    if not isinstance(out_dims, int):
        for d in _tree_flatten(out_dims)[0]:
            if d is not None and not isinstance(d, int):
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                                 "python collection of ints representing where in the outputs the vmapped dimension "
                                 "should appear.")
    if spec is None:
        ok = isinstance(out_dims, int) or out_dims is None or (isinstance(out_dims, tuple) and len(out_dims) == 1)
        flat_dims = list(out_dims) if isinstance(out_dims, tuple) and ok else [out_dims]
    else:
        flat_dims = _broadcast_prefix(out_dims, spec)
        ok = flat_dims is not None
    if not ok:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {_spec_str(_tree_flatten(out_dims)[1])} "
                         f"but outputs has structure {_spec_str(spec)}.")
    columns = list(zip(*(_tree_flatten(r)[0] for r in results)))
    out = []
    for column, d in zip(columns, flat_dims):
        if d is None:
            out.append(column[0])
            continue
        if not isinstance(column[0], _C.Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(column[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        out.append(_C.stack(list(column), d))
    return _tree_unflatten(out, spec)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced, for this call, by those of
    parameter_and_buffer_dicts (a dict by dotted name, or a sequence of dicts with no key in two of them)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated_keys = [key for key, n in counts.items() if n > 1]
        if repeated_keys:
            raise ValueError(f"{repeated_keys} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """(params, buffers): each name's tensors from every model stacked along a new dim 0; stacked parameters
    are new leaves that require grad."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    model0_typ = type(models[0])
    if not all(type(m) is model0_typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(model.named_parameters()) for model in models]
    params = {k: _construct_stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {k: _construct_stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


def _construct_stacked_leaf(tensors, name):
    all_requires_grad = all(t.requires_grad for t in tensors)
    none_requires_grad = all(not t.requires_grad for t in tensors)
    if not all_requires_grad and not none_requires_grad:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _C.stack(tensors)
    if all_requires_grad:
        result = result.detach().requires_grad_()
    return result
