"""vkt: a PyTorch-style `vulkan` device for Python, on any GPU with a Vulkan driver."""
import atexit
import math as _math

__version__ = "0.1.0"

from . import _C
from ._C import *  # noqa: F401,F403  Tensor, dtypes, creation functions and every operator
from . import autograd, linalg, nn, vulkan  # noqa: E402
from . import optim  # noqa: E402,F401
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402,F401
from ._C import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled  # noqa: E402,F401

from . import random as _random  # noqa: E402

for _name, _draw in _random.DRAWS.items():
    globals()[_name] = _random._with_generator(getattr(_C, _name), _draw)
for _name in ("tensor", "zeros", "ones", "empty", "rand", "randn", "full", "zeros_like", "ones_like", "empty_like",
              "rand_like", "randn_like", "full_like", "arange", "linspace", "logspace", "eye", "as_tensor"):
    if hasattr(_C, _name):
        globals()[_name] = autograd._with_requires_grad(globals()[_name])
from .functional import (  # noqa: E402,F401
    bincount, block_diag, broadcast_shapes, cartesian_prod, cdist, combinations, corrcoef, cov, cross,
    cumulative_trapezoid, diff, dist, einsum, ger, histc, histogram, histogramdd, inner, isin, kron, logcumsumexp, outer,
    tensordot, trapezoid, trapz, vander,
)
from .functional import (  # noqa: E402,F401
    adjoint, conj, conj_physical, conj_physical_, diagflat, diagonal_scatter, dsplit, empty_strided, float_power, fmax,
    fmin, gcd, heaviside, hsplit, is_conj, is_neg, isreal, lcm, ldexp, logaddexp2, nanquantile, positive, quantile,
    ravel, resolve_conj, resolve_neg, rsub, scalar_tensor, select_scatter, signbit, slice_scatter, tensor_split,
    unravel_index, vsplit,
)
from .functional import (  # noqa: E402,F401
    bartlett_window, blackman_window, chain_matmul, frexp, frobenius_norm, hamming_window, hann_window, hardshrink,
    index_reduce, is_inference, is_nonzero, is_signed, kaiser_window, mvlgamma, narrow_copy,
    nonzero_static, nuclear_norm, prelu, put, split_with_sizes, unsafe_chunk, unsafe_split, unsafe_split_with_sizes,
)
from ._toplevel import FUNCTIONS as _TOPLEVEL  # noqa: E402

globals().update(_TOPLEVEL)
e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None
from ._surface import (  # noqa: E402,F401
    are_deterministic_algorithms_enabled, as_tensor, asarray, can_cast, clone, finfo, frombuffer, get_default_device,
    get_default_dtype, iinfo, initial_seed, is_complex, is_deterministic_algorithms_warn_only_enabled,
    is_floating_point, is_storage, is_tensor, manual_seed, numel, promote_types, result_type, seed,
    set_default_device, set_default_dtype, set_printoptions, strided, typename, use_deterministic_algorithms,
)
from ._legacy_linalg import (  # noqa: E402,F401
    addr, cholesky, cholesky_inverse, cholesky_solve, eig, geqrf, lstsq, lu, lu_solve, lu_unpack, matrix_power, orgqr,
    ormqr, pinverse, qr, renorm, solve, svd, symeig, triangular_solve,
)
from . import safetensors, utils  # noqa: E402,F401
from .linalg import det, inv as inverse, matrix_exp, slogdet  # noqa: E402,F401
from .random import Generator, get_rng_state, set_rng_state  # noqa: E402,F401
from .random import _standard_gamma, bernoulli, multinomial, normal, poisson, randint_like  # noqa: E402,F401
from . import distributions  # noqa: E402,F401
from . import special  # noqa: E402,F401
from .serialization import load, save  # noqa: E402,F401
from .kernels import ElementwiseKernel, KernelCompileError, RawKernel  # noqa: E402,F401
from . import amp  # noqa: E402
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402,F401

amp._install()


def _shutdown():
    """Destroys every Vulkan object at exit; with VKT_VALIDATION=1, anything the layer said then (or
    earlier, unread), such as objects left undestroyed, goes to stderr."""
    import sys

    _C._shutdown()
    for message in vulkan.validation_messages():
        print("vkt: Vulkan validation:", message, file=sys.stderr)


atexit.register(_shutdown)
from . import func  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401  torch.vmap is torch.func.vmap
from . import compiler, testing  # noqa: E402,F401
from .compiler import compile  # noqa: E402,F401

# torch's dtype aliases; last, as from here on float and int in this module are vkt's dtypes, not Python's.
float, double, half, long, int = float32, float64, float16, int64, int32  # noqa: E402,F405
