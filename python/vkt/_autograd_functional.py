"""vkt.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a function, as torch.autograd.functional.

Built on vkt.autograd.grad (reverse mode): jvp and hvp take the double-backward trick, jacobian and hessian one
backward pass per output element (vectorize and forward-mode strategies are not offered).
"""
from . import _C


def _grad(*args, **kwargs):
    from .autograd import grad
    return grad(*args, **kwargs)


def _tuple(x, arg, fn):
    """(x as a tuple, whether it was one); TypeError unless it holds only tensors."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, _C.Tensor):
            where = f"element {i} of the " if is_tuple else ""
            raise TypeError(f"The {where}{arg} given to {fn} must be either a Tensor or a tuple of Tensors but "
                            f"the value at index {i} has type {type(t)}.")
    return items, is_tuple


def _prepare(inputs, create_graph):
    """Inputs that require grad, inside the caller's graph only with create_graph."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_() for x in inputs)


def _finish(xs, create_graph):
    return tuple(x if x is None or create_graph else x.detach() for x in xs)


def _fill(grads, like, strict, what):
    """Zeros for inputs the outputs do not depend on; with strict, an error naming the input."""
    out = []
    for i, (g, x) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(f"The {what} for input {i} is independent of the input.")
            g = _C.zeros_like(x)
        out.append(g)
    return tuple(out)


def _check_v(v, like, fn, side="output"):
    """v matches the function's outputs (or inputs: side) in number and shapes."""
    if len(v) != len(like):
        raise RuntimeError(f"{fn}: v has {len(v)} tensors where the function has {len(like)} {side}s.")
    for i, (a, b) in enumerate(zip(v, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Mismatch in shape: v[{i}] has a shape of {tuple(a.shape)} and the function's "
                               f"{side} {i} has a shape of {tuple(b.shape)}.")


def _input_v(v, inputs, fn):
    """The vector of a product with the inputs' side: v, or 1 for a single one-element input."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        return (_C.ones_like(inputs[0]),)
    vs = _tuple(v, "v", fn)[0]
    _check_v(vs, inputs, fn, "input")
    return vs


def _call(func, inputs, is_tuple):
    out = func(*inputs) if is_tuple else func(inputs[0])
    outs, out_tuple = _tuple(out, "outputs of the user-provided function", "the function")
    return outs, out_tuple


def _default_v(outputs, fn):
    for o in outputs:
        if o.numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the user-provided function returns a single "
                               f"Tensor with a single element ({fn}).")
    return tuple(_C.ones_like(o) for o in outputs)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product, v defaulting to 1 for a one-element output."""
    inputs, in_tuple = _tuple(inputs, "inputs", "vjp")
    inputs = _prepare(inputs, create_graph)
    outs, out_tuple = _call(func, inputs, in_tuple)
    vs = _tuple(v, "v", "vjp")[0] if v is not None else _default_v(outs, "vjp")
    _check_v(vs, outs, "vjp")
    diff = [(o, w) for o, w in zip(outs, vs) if o.requires_grad]
    grads = _grad([o for o, _ in diff], inputs, [w for _, w in diff], create_graph=create_graph,
                  allow_unused=True) if diff else (None,) * len(inputs)
    grads = _finish(_fill(grads, inputs, strict, "output of the user-provided function"), create_graph)
    outs = _finish(outs, create_graph)
    return (outs if out_tuple else outs[0]), (grads if in_tuple else grads[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by differentiating a vjp with respect to its vector."""
    inputs, in_tuple = _tuple(inputs, "inputs", "jvp")
    inputs = _prepare(inputs, create_graph)
    vs = _input_v(v, inputs, "jvp")
    outs, out_tuple = _call(func, inputs, in_tuple)
    # u -> u^T J is linear in u: differentiating (u^T J) . v with respect to u gives J v.
    us = tuple(_C.zeros_like(o).requires_grad_() for o in outs)
    diff = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
    if diff:
        vjps = _grad([o for o, _ in diff], inputs, [u for _, u in diff], create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(vjps, vs) if g is not None and g.requires_grad]
    else:
        pairs = []
    if pairs:
        jv = _grad([g for g, _ in pairs], us, [w for _, w in pairs], create_graph=create_graph, allow_unused=True)
    else:
        jv = (None,) * len(outs)
    jv = _finish(_fill(jv, outs, strict, "output"), create_graph)
    outs = _finish(outs, create_graph)
    return (outs if out_tuple else outs[0]), (jv if out_tuple else jv[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d func(inputs) / d inputs: for each output and input a tensor of shape output.shape + input.shape (one
    backward pass per output element)."""
    if strategy != "reverse-mode":
        raise NotImplementedError(f"vkt.autograd.functional.jacobian: strategy={strategy!r} is not supported "
                                  "(vkt has reverse mode only)")
    inputs, in_tuple = _tuple(inputs, "inputs", "jacobian")
    inputs = _prepare(inputs, create_graph)
    outs, out_tuple = _call(func, inputs, in_tuple)
    rows = []
    for i, o in enumerate(outs):
        flat = o.reshape(-1)
        per_input = [[] for _ in inputs]
        for j in range(flat.numel()):
            if o.requires_grad:
                grads = _grad(flat[j], inputs, retain_graph=True, create_graph=create_graph, allow_unused=True)
            else:
                grads = (None,) * len(inputs)
            for k, (g, x) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    g = _C.zeros_like(x)
                per_input[k].append(g)
        blocks = []
        for k, x in enumerate(inputs):
            shape = tuple(o.shape) + tuple(x.shape)
            block = (_C.stack(per_input[k]) if per_input[k] else _C.zeros(0, dtype=x.dtype, device=x.device))
            blocks.append(block.reshape(shape))
        blocks = _finish(blocks, create_graph)
        rows.append(blocks if in_tuple else blocks[0])
    return tuple(rows) if out_tuple else rows[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The second derivatives of a function with a one-element output: the jacobian of its gradient."""
    inputs_t, in_tuple = _tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        out = func(*xs) if in_tuple else func(xs[0])
        outs, _ = _tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element.")
        grads = _grad(outs[0], xs, create_graph=True, allow_unused=True) if outs[0].requires_grad else \
            (None,) * len(xs)
        grads = _fill(grads, xs, strict, "gradient")
        return grads if in_tuple else grads[0]

    return jacobian(gradient, inputs_t if in_tuple else inputs_t[0], create_graph=create_graph, strict=strict,
                    strategy=outer_jacobian_strategy)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with a one-element output."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function with a one-element output (H is symmetric: the same as vhp)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, fn):
    inputs, in_tuple = _tuple(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph)
    vs = _input_v(v, inputs, fn)
    outs, out_tuple = _call(func, inputs, in_tuple)
    if out_tuple or outs[0].numel() != 1:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor with a single element.")
    out = outs[0]
    grads = _grad(out, inputs, create_graph=True, allow_unused=True) if out.requires_grad else (None,) * len(inputs)
    pairs = [(g, w) for g, w in zip(grads, vs) if g is not None and g.requires_grad]
    hv = _grad([g for g, _ in pairs], inputs, [w for _, w in pairs], create_graph=create_graph,
               allow_unused=True) if pairs else (None,) * len(inputs)
    hv = _finish(_fill(hv, inputs, strict, "hessian-vector product"), create_graph)
    return _finish((out,), create_graph)[0], (hv if in_tuple else hv[0])
