"""vkt.nn.utils: gradient clipping, flat parameter vectors, rnn (padding and packing sequences), parametrizations
(parametrize, parametrizations, the hook-based weight_norm and spectral_norm), pruning, stateless functional_call
and Conv/Linear-BatchNorm fusion."""
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import rnn  # noqa: F401
from . import parametrizations, parametrize, prune, stateless  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
