"""vkt.special: torch.special's names. The special functions are table ops (csrc/ops/table.c), computed by shaders
and fused like any elementwise op; the rest are aliases of vkt's own ops, and multigammaln a sum of lgammas."""
import math

from . import _C

entr = _C._special_entr
ndtr = _C._special_ndtr
ndtri = _C._special_ndtri
log_ndtr = _C._special_log_ndtr
i0e = _C._special_i0e
i1 = _C._special_i1
i1e = _C._special_i1e
xlog1py = _C._special_xlog1py
erfcx = _C._special_erfcx
zeta = _C._special_zeta

i0 = _C.i0
gammaln = _C.lgamma
digamma = psi = _C.digamma
polygamma = _C.polygamma
xlogy = _C.xlogy
gammainc, gammaincc = _C.igamma, _C.igammac
logit = _C.logit
expit = _C.sigmoid
sinc = _C.sinc
erf, erfc, erfinv = _C.erf, _C.erfc, _C.erfinv
expm1, exp2, log1p = _C.expm1, _C.exp2, _C.log1p
logsumexp, softmax, log_softmax = _C.logsumexp, _C.softmax, _C.log_softmax


def round(input, *, decimals=0):
    """vkt.round, less its copy of an integer tensor: torch.special.round runs the rounding kernel, which has no
    integer loop."""
    if not decimals and isinstance(input, _C.Tensor) and not input.dtype.is_floating_point:
        from .nn.functional import _no_kernel

        raise _no_kernel("round_vml_cpu", input.dtype)
    return _C.round(input, decimals=decimals)


def multigammaln(input, p):
    """The log of the multivariate gamma function of dimension p: sum of lgamma(x - i / 2) over i < p, plus
    p (p - 1) / 4 log(pi). Like torch 2.13, no domain check (which would read the device): below (p - 1) / 2 the
    lgammas' values stand."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    total = input.lgamma()
    for i in range(1, p):
        total = total + (input - 0.5 * i).lgamma()
    return total + p * (p - 1) / 4 * math.log(math.pi)


__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln",
           "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]
