# vkt.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap) against torch.func on the same float64
# inputs: values and structure, nested transforms, per-sample gradients and ensembles of nn.Linear through
# functional_call, and errors (type and message) where vkt gives torch's.
import numpy as np
import pytest
import torch

import vkt
from conftest import raised

RNG = np.random.default_rng(0)
A, B, C, D = RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal((2, 3)), RNG.standard_normal(3)


def T(L, a, device):
    return torch.tensor(a) if L is torch else vkt.tensor(a, device=device)


def as_numpy(o):
    if isinstance(o, dict):
        return {k: as_numpy(v) for k, v in o.items()}
    if isinstance(o, (tuple, list)):
        return [as_numpy(i) for i in o]
    if isinstance(o, vkt.Tensor):
        return o.detach().cpu().numpy()
    return o.detach().numpy() if isinstance(o, torch.Tensor) else o


def assert_same(a, b):
    assert type(a) is type(b)
    if isinstance(b, dict):
        assert a.keys() == b.keys()
        for k in b:
            assert_same(a[k], b[k])
    elif isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a.shape == b.shape
        wide = b.dtype == np.float64  # float32 values (a Python number's tensor) may differ by an ulp on a GPU
        np.testing.assert_allclose(a, b, rtol=1e-10 if wide else 1e-5, atol=1e-12 if wide else 1e-6)


def vjp_at(F, f, primals, cotangents, **kw):
    out = F.vjp(f, *primals, **kw)
    return (out[0], out[1](cotangents)) + tuple(out[2:])


def quad(p, x):
    return ((x @ p["w"]) + p["b"]).pow(2).sum()


CASES = [  # name, call(F, L, device) -> result
    ("grad_elementwise", lambda F, L, d: F.grad(lambda x: (x.sin() * x).sum())(T(L, A, d))),
    ("grad_matmul_argnums_tuple", lambda F, L, d: F.grad(lambda x, y: (x @ y).tanh().sum(), argnums=(0, 1))(
        T(L, A, d), T(L, B, d))),
    ("grad_negative_argnum", lambda F, L, d: F.grad(lambda x, y: (x * y).mean(), argnums=-1)(T(L, A, d), T(L, B, d))),
    ("grad_dict_argument", lambda F, L, d: F.grad(quad)({"w": T(L, A, d), "b": T(L, B, d)}, T(L, D, d))),
    ("grad_unused_argument", lambda F, L, d: F.grad(lambda x, y: x.exp().sum(), argnums=(0, 1))(
        T(L, B, d), T(L, D, d))),
    ("grad_has_aux", lambda F, L, d: F.grad(lambda x: ((x * x).sum(), (x.mean(), [x.amax()])), has_aux=True)(
        T(L, B, d))),
    ("grad_and_value", lambda F, L, d: F.grad_and_value(lambda x: x.pow(3).sum())(T(L, B, d))),
    ("grad_and_value_has_aux", lambda F, L, d: F.grad_and_value(lambda x: (x.pow(3).sum(), x * 2), has_aux=True)(
        T(L, B, d))),
    ("vjp", lambda F, L, d: vjp_at(F, lambda x, y: x.sin() @ y, (T(L, A, d), T(L, B, d)), T(L, D, d))),
    ("vjp_tuple_output_has_aux", lambda F, L, d: vjp_at(F, lambda x: ((x.exp(), x.sum(0)), x.max()), (T(L, A, d),),
                                                        (T(L, A, d), T(L, B, d)), has_aux=True)),
    ("jvp", lambda F, L, d: F.jvp(lambda x, y: (x * y).tanh(), (T(L, A, d), T(L, B, d)),
                                  (T(L, A * 0 + 1, d), T(L, B * 0 + 2, d)))),
    ("jvp_tuple_output_has_aux", lambda F, L, d: F.jvp(lambda x: ((x.sin(), (x @ x.t()).sum()), x.sum()),
                                                       (T(L, A, d),), (T(L, A, d),), has_aux=True)),
    ("jacrev", lambda F, L, d: F.jacrev(lambda x: x.sin() @ x.t())(T(L, A, d))),
    ("jacrev_argnums_tuple_outputs", lambda F, L, d: F.jacrev(lambda x, y: ((x * y).tanh(), (x @ y).sum()),
                                                              argnums=(0, 1))(T(L, A, d), T(L, B, d))),
    ("jacrev_has_aux_chunked", lambda F, L, d: F.jacrev(lambda x: (x.exp(), x.sum()), has_aux=True, chunk_size=2)(
        T(L, D, d))),
    ("jacfwd", lambda F, L, d: F.jacfwd(lambda x: x.sin() @ x.t())(T(L, A, d))),
    ("jacfwd_argnums", lambda F, L, d: F.jacfwd(lambda x, y: x + y ** 2, argnums=(0, 1))(T(L, B, d), T(L, B, d))),
    ("hessian", lambda F, L, d: F.hessian(lambda x: (x.exp() * x).sum() * x.sum())(T(L, D, d))),
    ("hessian_argnums_tuple", lambda F, L, d: F.hessian(lambda x, y: (x.pow(2) * y).sum(), argnums=(0, 1))(
        T(L, C, d), T(L, D, d))),
    ("vmap_reduction", lambda F, L, d: F.vmap(lambda x: x.sum(0))(T(L, A, d))),
    ("vmap_in_dim_1_out_dim_1", lambda F, L, d: F.vmap(lambda x: x.exp() * 2, in_dims=1, out_dims=1)(T(L, A, d))),
    ("vmap_matmul_unbatched_arg", lambda F, L, d: F.vmap(lambda x, w: x @ w, in_dims=(0, None))(
        T(L, A, d), T(L, A.T, d))),
    ("vmap_negative_dims_tuple_out", lambda F, L, d: F.vmap(lambda x: (x * 2, x.sum()), in_dims=-1,
                                                            out_dims=(-1, 0))(T(L, A, d))),
    ("vmap_nested_in_dims", lambda F, L, d: F.vmap(lambda p: p[0] * p[1], in_dims=((0, None),))(
        (T(L, A, d), T(L, B, d)))),
    ("vmap_dict_argument", lambda F, L, d: F.vmap(lambda p: p["a"] + p["b"], in_dims=({"a": 1, "b": 0},))(
        {"a": T(L, A.T, d), "b": T(L, A, d)})),
    ("vmap_out_dims_none", lambda F, L, d: F.vmap(lambda x, y: (x * 2, y), in_dims=(0, None), out_dims=(0, None))(
        T(L, A, d), T(L, B, d))),
    ("vmap_namedtuple_output", lambda F, L, d: F.vmap(lambda r: r.max(0))(T(L, A, d))),
    ("vmap_of_vmap", lambda F, L, d: F.vmap(F.vmap(lambda x, y: x * y, in_dims=(0, None)), in_dims=(None, 0))(
        T(L, B, d), T(L, D, d))),
    ("vmap_of_grad", lambda F, L, d: F.vmap(F.grad(lambda x: (x.sin() * x).sum()))(T(L, A, d))),
    ("vmap_of_jacrev", lambda F, L, d: F.vmap(F.jacrev(lambda x: x.sin() * x.sum()))(T(L, C, d))),
    ("grad_of_vmap", lambda F, L, d: F.grad(lambda x: F.vmap(lambda r: r.pow(3).sum())(x).sum())(T(L, C, d))),
    ("grad_of_grad", lambda F, L, d: F.grad(F.grad(lambda x: x.sin() * x.pow(3)))(T(L, 0.7, d))),
    ("grad_of_grad_closure", lambda F, L, d: F.grad(lambda x: F.grad(lambda y: (x * y.pow(2)).sum())(x).sum())(
        T(L, D, d))),
    ("jacrev_of_jacrev", lambda F, L, d: F.jacrev(F.jacrev(lambda x: x.sin() * x.sum()))(T(L, D, d))),
    ("jvp_of_grad", lambda F, L, d: F.jvp(F.grad(lambda x: x.pow(3).sum()), (T(L, D, d),), (T(L, D * 0 + 1, d),))),
]


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(device, name, call):
    assert_same(as_numpy(call(vkt.func, vkt, device)), as_numpy(call(torch.func, torch, device)))


def linear_models(L, device, n):
    """n nn.Linear(3, 2) of both libraries with the same weights."""
    models = []
    for i in range(n):
        m = L.nn.Linear(3, 2).double()
        w, b = RNG.standard_normal((2, 3)), RNG.standard_normal(2)
        m.load_state_dict({"weight": T(L, w, device), "bias": T(L, b, device)})
        models.append(m.to(device) if L is vkt else m)
    return models


def test_per_sample_gradients_of_a_linear_model(device):
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 2))
    state = RNG.bit_generator.state
    results = []
    for L in (vkt, torch):
        RNG.bit_generator.state = state
        model = linear_models(L, device, 1)[0]
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def loss(params, buffers, xi, yi, L=L, model=model):
            out = L.func.functional_call(model, (params, buffers), (xi.unsqueeze(0),))
            return L.nn.functional.mse_loss(out, yi.unsqueeze(0))
        per_sample = L.func.vmap(L.func.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, T(L, x, device),
                                                                                 T(L, y, device))
        results.append(as_numpy(per_sample))
    assert_same(results[0], results[1])
    assert results[0]["weight"].shape == (4, 2, 3)


def test_model_ensemble_with_stack_module_state(device):
    x = RNG.standard_normal((5, 3))
    state = RNG.bit_generator.state
    results = []
    for L in (vkt, torch):
        RNG.bit_generator.state = state
        models = linear_models(L, device, 3)
        params, buffers = L.func.stack_module_state(models)

        def fmodel(params, buffers, x, L=L, base=models[0]):
            return L.func.functional_call(base, (params, buffers), (x,))
        results.append(as_numpy(L.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, T(L, x, device))))
    assert_same(results[0], results[1])
    assert results[0].shape == (3, 5, 2)


def test_results_leave_no_graph_unless_an_input_requires_grad(device):
    x = T(vkt, B, device)
    g, value = vkt.func.grad_and_value(lambda t: (t * t).sum())(x)
    assert not g.requires_grad and not value.requires_grad
    xr = T(vkt, B, device).requires_grad_()
    g = vkt.func.grad(lambda t: t.pow(3).sum())(xr)
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(as_numpy(xr.grad), 6 * B, rtol=1e-12)


def f_vec(x):
    return x * 2


ERRORS = [  # name, call(F, L, device); the same exception type, and message where exact is True
    ("grad_non_scalar_output", True, lambda F, L, d: F.grad(f_vec)(T(L, B, d))),
    ("grad_non_tensor_output", True, lambda F, L, d: F.grad(lambda x: 1.0)(T(L, B, d))),
    ("grad_has_aux_not_a_pair", True, lambda F, L, d: F.grad(lambda x: x.sum(), has_aux=True)(T(L, B, d))),
    ("grad_argnum_out_of_range", True, lambda F, L, d: F.grad(lambda x: x.sum(), argnums=2)(T(L, B, d))),
    ("grad_argnums_empty", True, lambda F, L, d: F.grad(lambda x: x.sum(), argnums=())(T(L, B, d))),
    ("grad_argnums_repeated", True, lambda F, L, d: F.grad(lambda x, y: x.sum(), argnums=(0, 0))(T(L, B, d), 1)),
    ("grad_argnums_float", True, lambda F, L, d: F.grad(lambda x: x.sum(), argnums=0.0)(T(L, B, d))),
    ("grad_argnums_tuple_of_floats", True, lambda F, L, d: F.grad(lambda x: x.sum(), argnums=(0.0,))(T(L, B, d))),
    ("grad_non_tensor_argument", True, lambda F, L, d: F.grad(lambda x: x)(1.0)),
    ("vjp_non_tensor_output", True, lambda F, L, d: F.vjp(lambda x: 1.0, T(L, B, d))),
    ("vjp_cotangent_structure", False, lambda F, L, d: F.vjp(lambda x: (x, x), T(L, B, d))[1](T(L, B, d))),
    ("vjp_cotangent_shape", True, lambda F, L, d: F.vjp(f_vec, T(L, B, d))[1](T(L, D, d))),
    ("jvp_primals_not_tuple", True, lambda F, L, d: F.jvp(f_vec, T(L, B, d), (T(L, B, d),))),
    ("jvp_structure_mismatch", False, lambda F, L, d: F.jvp(f_vec, (T(L, B, d),), T(L, B, d))),
    ("jvp_tangent_shape", True, lambda F, L, d: F.jvp(f_vec, (T(L, B, d),), (T(L, D, d),))),
    ("jvp_non_tensor_primal", True, lambda F, L, d: F.jvp(f_vec, (1.0,), (1.0,))),
    ("jacrev_chunk_size_0", True, lambda F, L, d: F.jacrev(f_vec, chunk_size=0)),
    ("vmap_batch_sizes_differ", True, lambda F, L, d: F.vmap(lambda x, y: x * y)(T(L, A, d), T(L, B, d))),
    ("vmap_in_dim_out_of_range", True, lambda F, L, d: F.vmap(f_vec, in_dims=2)(T(L, A, d))),
    ("vmap_in_dims_list", True, lambda F, L, d: F.vmap(f_vec, in_dims=[0])(T(L, A, d))),
    ("vmap_in_dims_structure", False, lambda F, L, d: F.vmap(f_vec, in_dims=(0, 0))(T(L, A, d))),
    ("vmap_in_dim_not_int", True, lambda F, L, d: F.vmap(f_vec, in_dims=("a",))(T(L, A, d))),
    ("vmap_in_dim_for_non_tensor", True, lambda F, L, d: F.vmap(lambda x, y: x * y)(T(L, A, d), 2.0)),
    ("vmap_nothing_batched", True, lambda F, L, d: F.vmap(f_vec, in_dims=None)(T(L, A, d))),
    ("vmap_no_inputs", True, lambda F, L, d: F.vmap(f_vec)()),
    ("vmap_non_tensor_output", True, lambda F, L, d: F.vmap(lambda x: 1.0)(T(L, A, d))),
    ("vmap_out_dims_structure", False, lambda F, L, d: F.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(T(L, A, d))),
    ("vmap_out_dims_not_int", True, lambda F, L, d: F.vmap(f_vec, out_dims="a")(T(L, A, d))),
    ("vmap_bad_randomness", True, lambda F, L, d: F.vmap(f_vec, randomness="sometimes")),
    ("vmap_chunk_size_0", True, lambda F, L, d: F.vmap(f_vec, chunk_size=0)),
    ("vmap_randomness_none", True, lambda F, L, d: F.vmap(f_vec, randomness=None)),
] + [(f"vmap_random_{name}", True, (lambda draw: lambda F, L, d: F.vmap(lambda x: draw(L, x))(T(L, A, d)))(draw))
     for name, draw in [
         ("rand", lambda L, x: x + L.rand(4, dtype=x.dtype, device=x.device)),
         ("randn", lambda L, x: x + L.randn(4, dtype=x.dtype, device=x.device)),
         ("randint", lambda L, x: x + L.randint(0, 5, (4,), device=x.device)),
         ("randperm", lambda L, x: x + L.randperm(4, device=x.device)),
         ("rand_like", lambda L, x: x + L.rand_like(x)),
         ("randn_like", lambda L, x: x + L.randn_like(x)),
         ("rand_generator", lambda L, x: x + L.rand(4, dtype=x.dtype, generator=L.Generator())),
         ("normal", lambda L, x: L.normal(x, 1.0)),
         ("bernoulli", lambda L, x: L.bernoulli(x.sigmoid())),
         ("uniform_", lambda L, x: x.clone().uniform_()),
         ("multinomial", lambda L, x: L.multinomial(x.exp(), 2)),
         ("poisson", lambda L, x: L.poisson(x.exp())),
         ("dropout", lambda L, x: L.nn.functional.dropout(x, 0.5)),
         ("nested_different_in_error", lambda L, x: L.func.vmap(lambda y: y + L.rand(()), randomness="different")(x)),
         ("nested_error_in_same", lambda L, x: L.func.vmap(lambda y: y + L.rand(()))(x)),
     ]]


@pytest.mark.parametrize("name,exact,call", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(device, name, exact, call):
    got = raised(lambda: call(vkt.func, vkt, device))
    want = raised(lambda: call(torch.func, torch, device))
    assert want[0] is not None
    assert got[0] == want[0], (got, want)
    if exact:
        assert got[1] == want[1]
    else:  # the message names torch's TreeSpec, which vkt prints its own way: compare up to it
        assert got[1].split("structure")[0] == want[1].split("structure")[0], (got, want)


def test_vmap_randomness(device):
    """'same' draws one set of values for every element, leaving the stream where one unbatched draw would; 'different'
    draws each element's own; nested, each level does as its flag says. A random op refused in 'error' mode leaves no
    mode behind. dropout's training=False draws nothing, so it is allowed."""
    F = vkt.func
    x = vkt.zeros(3, 4, device=device)
    draw = lambda t: t + vkt.rand(4, device=device)  # noqa: E731
    vkt.manual_seed(5)
    same, after = F.vmap(draw, randomness="same")(x).cpu().numpy(), vkt.rand(4, device=device).cpu().numpy()
    vkt.manual_seed(5)
    first, second = vkt.rand(4, device=device).cpu().numpy(), vkt.rand(4, device=device).cpu().numpy()
    assert np.array_equal(same, np.broadcast_to(first, (3, 4))) and np.array_equal(after, second)
    different = F.vmap(draw, randomness="different")(x).cpu().numpy()
    assert len({row.tobytes() for row in different}) == 3
    nested = F.vmap(F.vmap(lambda t: t + vkt.rand((), device=device), randomness="same"), randomness="different")
    y = nested(vkt.zeros(2, 3, device=device)).cpu().numpy()
    assert np.all(y == y[:, :1]) and y[0, 0] != y[1, 0]
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(draw)(x)
    assert tuple(vkt.rand(2, device=device).shape) == (2,)
    assert np.array_equal(F.vmap(lambda t: vkt.nn.functional.dropout(t, 0.5, training=False))(x).cpu().numpy(),
                          np.zeros((3, 4), dtype=np.float32))
