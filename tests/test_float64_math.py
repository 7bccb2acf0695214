# float64 transcendentals on a Vulkan device (shaders/math_f64.glsl): each op against NumPy's float64 (C's libm),
# or mpmath where NumPy has no such function, in ulps over random arguments at many magnitudes, near their special
# points, huge and tiny arguments, +-0, +-inf and NaN (these bit for bit); no CPU fallback; activations, softmax and
# the losses; fused chains; and gradients by gradcheck.
import math
import zlib

import numpy as np
import pytest

import vkt
from conftest import assert_close

mpmath = pytest.importorskip("mpmath")

F = vkt.nn.functional
INF, NAN = math.inf, math.nan
TINY = 5e-324  # the smallest subnormal
HUGE = 1.7976931348623157e308
# Values every unary op sees: signed zeros, infinities, NaN, subnormals, the normal range's ends, and small integers.
SPECIAL = [0.0, -0.0, INF, -INF, NAN, TINY, -TINY, 1e-310, 2.2250738585072014e-308, -2.2250738585072014e-308, 1e-300,
           HUGE, -HUGE, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 10.0, 100.0]


@pytest.fixture
def f64(dev):
    """The vulkan device, where it has shaderFloat64 (without it, float64 takes the CPU path, as it must); fallback
    counters reset."""
    if not vkt.vulkan.get_device_properties().shader_float64:
        pytest.skip("this Vulkan adapter has no float64 shaders")
    vkt.vulkan.reset_fallback_stats()
    yield dev
    assert vkt.vulkan.fallback_stats() == {}


def spread(rng, lo, hi, n=1500):
    """n values of both signs whose magnitudes are 10^u for u uniform in [lo, hi]."""
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(lo, hi, n)


def key(x):
    """Doubles as integers in their order: neighbours differ by 1, -0 is just below +0."""
    i = np.asarray(x, np.float64).view(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFFFFFFFFFF) - 1, i)


def ulps(got, ref):
    """Units in the last place between got and ref where ref is finite and not 0; NaN, infinities and zeros must
    match exactly (a zero's sign included): those count as 0 or as inf."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    exact = np.isnan(ref) | np.isinf(ref) | (ref == 0)
    same = (np.isnan(got) & np.isnan(ref)) | (key(got) == key(ref))
    kg, kr = key(got), key(ref)
    with np.errstate(over="ignore"):  # opposite signs: the sum of the two (far apart anyway)
        d = np.where((kg ^ kr) < 0, np.abs(kg.astype(np.float64)) + np.abs(kr.astype(np.float64)),
                     np.abs(kg - kr).astype(np.float64))
    return np.where(exact, np.where(same, 0.0, INF), np.where(np.isnan(got), INF, d))


def assert_ulps(got, ref, x, bound):
    d = ulps(got, ref)
    i = int(np.argmax(d))
    assert d[i] <= bound, f"{d[i]} ulp at {x[i]!r}: got {got[i]!r}, want {ref[i]!r}"


def on_vulkan(f, *xs):
    return f(*(vkt.tensor(np.asarray(x, np.float64), device="vulkan") for x in xs)).cpu().numpy()


def mp(f, x, prec=120):
    """f in mpmath at prec bits, rounded to float64; NaN where it has no real value."""
    out = np.empty(len(x))
    with mpmath.workprec(prec):
        for i, v in enumerate(x):
            try:
                r = f(mpmath.mpf(float(v))) if math.isfinite(v) else NAN
                out[i] = float(r) if not isinstance(r, mpmath.mpc) else NAN
            except (ValueError, ZeroDivisionError):
                out[i] = NAN
    return out


def rng_of(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


# The elementary functions against NumPy (C's libm), which rounds correctly or nearly: (name, vkt, NumPy, arguments
# besides SPECIAL, ulps). math_f64.glsl's are within 1 ulp of the correctly rounded result (2 for exp2, sinh, cosh,
# tanh); these bounds are against libm's, which adds its own.
ELEMENTARY = [
    ("exp", lambda x: x.exp(), np.exp,
     lambda r: np.r_[r.uniform(-745.2, 709.8, 3000), spread(r, -320, 2), 709.782712893384, -745.1332191019411], 2),
    ("exp2", lambda x: x.exp2(), np.exp2, lambda r: np.r_[r.uniform(-1076, 1024, 3000), spread(r, -320, 2)], 2),
    ("expm1", lambda x: x.expm1(), np.expm1, lambda r: np.r_[r.uniform(-40, 709.7, 2000), spread(r, -320, 1)], 2),
    ("log", lambda x: x.log(), np.log, lambda r: np.r_[np.abs(spread(r, -323, 308)), 1 + spread(r, -16, -1)], 2),
    ("log2", lambda x: x.log2(), np.log2, lambda r: np.r_[np.abs(spread(r, -323, 308)), 1 + spread(r, -16, -1)], 2),
    ("log10", lambda x: x.log10(), np.log10,
     lambda r: np.r_[np.abs(spread(r, -323, 308)), 1 + spread(r, -16, -1), 10.0 ** np.arange(-307, 308)], 2),
    ("log1p", lambda x: x.log1p(), np.log1p,
     lambda r: np.r_[np.abs(spread(r, -320, 308)), spread(r, -20, 0), -1 + 10.0 ** r.uniform(-16, 0, 300)], 2),
    ("sin", lambda x: x.sin(), np.sin, lambda r: np.r_[spread(r, -10, 6.2), spread(r, 6.2, 308)], 2),
    ("cos", lambda x: x.cos(), np.cos, lambda r: np.r_[spread(r, -10, 6.2), spread(r, 6.2, 308)], 2),
    ("tan", lambda x: x.tan(), np.tan, lambda r: np.r_[spread(r, -10, 6.2), spread(r, 6.2, 308)], 2),
    ("asin", lambda x: x.asin(), np.arcsin, lambda r: np.r_[r.uniform(-1, 1, 2000), spread(r, -320, 0)], 2),
    ("acos", lambda x: x.acos(), np.arccos, lambda r: np.r_[r.uniform(-1, 1, 2000), spread(r, -320, 0)], 2),
    ("atan", lambda x: x.atan(), np.arctan, lambda r: spread(r, -320, 308), 2),
    ("sinh", lambda x: x.sinh(), np.sinh, lambda r: np.r_[spread(r, -320, 2.86), r.uniform(700, 711, 200)], 3),
    ("cosh", lambda x: x.cosh(), np.cosh, lambda r: np.r_[spread(r, -320, 2.86), r.uniform(-711, -700, 200)], 3),
    ("tanh", lambda x: x.tanh(), np.tanh, lambda r: spread(r, -320, 2), 3),
    ("asinh", lambda x: x.asinh(), np.arcsinh, lambda r: spread(r, -320, 308), 2),
    ("acosh", lambda x: x.acosh(), np.arccosh,
     lambda r: np.r_[1 + np.abs(spread(r, -16, 1)), 10 ** r.uniform(0, 308, 500)], 2),
    ("atanh", lambda x: x.atanh(), np.arctanh,
     lambda r: np.r_[r.uniform(-1, 1, 2000), 1 - 10 ** r.uniform(-16, 0, 300)], 2),
    ("erf", lambda x: x.erf(), np.vectorize(math.erf), lambda r: spread(r, -320, 1.5), 2),
    ("erfc", lambda x: x.erfc(), np.vectorize(math.erfc),
     lambda r: np.r_[spread(r, -320, 1), r.uniform(20, 27.3, 300)], 2),
]


@pytest.mark.parametrize("name,f,ref,args,bound", ELEMENTARY, ids=[c[0] for c in ELEMENTARY])
def test_elementary(f64, name, f, ref, args, bound):
    x = np.r_[args(rng_of(name)), SPECIAL]
    with np.errstate(all="ignore"):
        want = ref(x)
    assert_ulps(on_vulkan(f, x), want, x, bound)


def test_trig_reduction_bound(f64):
    """sin, cos and tan reduce by Cody and Waite's three parts of pi/2 below 2^20 pi/2 and by Payne and Hanek's
    above: both sides of that bound, multiples of pi/2 (where the reduced argument cancels), and the double closest to
    one (6381956970095103 2^797, 2^-61 of it away) against 400-digit mpmath."""
    r = rng_of("trig")
    bound = 2.0**20 * math.pi / 2
    x = np.r_[bound * (1 + spread(r, -17, -1) / 10), np.round(r.uniform(1, 2**22, 300)) * (np.pi / 2),
              (np.pi / 2) * 2.0 ** np.arange(0, 1000, 7), 6381956970095103 * 2.0**797, 1e22, 2.0**1023]
    for name, f in [("sin", mpmath.sin), ("cos", mpmath.cos), ("tan", mpmath.tan)]:
        got = on_vulkan(lambda t: getattr(t, name)(), x)
        assert_ulps(got, mp(f, x, prec=1400), x, 1)


def test_atan2(f64):
    r = rng_of("atan2")
    y = np.r_[spread(r, -300, 300, 3000), [v for v in SPECIAL for _ in SPECIAL]]
    x = np.r_[spread(r, -300, 300, 3000), SPECIAL * len(SPECIAL)]
    assert_ulps(on_vulkan(vkt.atan2, y, x), np.arctan2(y, x), np.c_[y, x], 2)


def test_pow(f64):
    """pow against NumPy's, C99's special cases included (0^0, negative bases to integers, infinities, NaN), and
    integer powers exact."""
    r = rng_of("pow")
    edge = SPECIAL + [3.5, -3.5, 0.999999, 1.000001, 1e20, -1e20, 2.0**53 + 2, 7.0, -7.0]
    x = np.r_[r.uniform(0, 10, 2000), np.abs(spread(r, -300, 300, 2000)), r.uniform(-10, 10, 2000),
              1 + spread(r, -12, -6.1, 1000), [v for v in edge for _ in edge]]  # near 1 with |y| > 2^31: fdlibm's
    y = np.r_[r.uniform(-60, 60, 2000), spread(r, -3, 0, 2000), r.integers(-60, 60, 2000), spread(r, 8, 12, 1000),
              edge * len(edge)]  # series for log(x) there
    with np.errstate(all="ignore"):
        assert_ulps(on_vulkan(vkt.pow, x, y), np.power(x, y), np.c_[x, y], 2)
    xi, yi = r.integers(-40, 40, 1000).astype(float), r.integers(0, 9, 1000).astype(float)
    np.testing.assert_array_equal(on_vulkan(vkt.pow, xi, yi), xi**yi)


def test_erfinv(f64):
    r = rng_of("erfinv")
    x = np.r_[r.uniform(-1, 1, 500), 1 - 10 ** r.uniform(-16, -1, 200), spread(r, -320, -1, 200), SPECIAL]
    assert_ulps(on_vulkan(lambda t: t.erfinv(), x), mp(mpmath.erfinv, x), x, 2)


def reflection_ulps(got, ref, x, terms):
    """For x < 0, where lgamma and digamma have zeros that the reflection formula's terms cancel into: the error in
    units of the larger term's last place."""
    scale = np.spacing(np.maximum(np.abs(ref), terms))
    return np.abs(got - ref) / scale


def test_lgamma(f64):
    """lgamma within 2 ulp for x > 0; for x < 0 (the reflection log(pi / |x sin(pi x)|) - lgamma(-x)), within 5 ulp
    of its larger term (near its zeros, only the absolute error stays small)."""
    r = rng_of("lgamma")
    pos = np.r_[np.abs(spread(r, -320, 305, 800)), r.uniform(0, 10, 500), 1 + spread(r, -12, -1, 100),
                2 + spread(r, -12, -1, 100), 1.4616321449683623]
    special = np.array([0.0, -0.0, INF, -INF, NAN, -1.0, -2.0, -1e300, 1.0, 2.0, HUGE, TINY, -TINY])
    assert_ulps(on_vulkan(vkt.lgamma, pos), mp(mpmath.loggamma, pos), pos, 2)
    got = on_vulkan(vkt.lgamma, special)
    log_tiny = -np.log(TINY)
    np.testing.assert_array_equal(got, [INF, INF, INF, INF, NAN, INF, INF, INF, 0, 0, INF, log_tiny, log_tiny])
    neg = -np.r_[r.uniform(0, 30, 800), 10 ** r.uniform(-15, 6, 200)]
    neg = neg[neg != np.floor(neg)]
    ref = mp(lambda v: mpmath.log(abs(mpmath.gamma(v))), neg)
    terms = np.maximum(np.abs(mp(lambda v: mpmath.log(mpmath.pi / abs(v * mpmath.sinpi(v))), neg)),
                       np.abs(mp(lambda v: mpmath.loggamma(-v), neg)))
    assert reflection_ulps(on_vulkan(vkt.lgamma, neg), ref, neg, terms).max() <= 5


def test_digamma(f64):
    """digamma within 2 ulp for x > 0 (its zero at 1.4616 included); for x < 0 (psi(1 - x) - pi / tan(pi x)) within
    3 ulp of the larger term."""
    r = rng_of("digamma")
    pos = np.r_[np.abs(spread(r, -320, 305, 800)), r.uniform(0, 12, 600), 1.4616321449683623 + spread(r, -12, -2, 200)]
    assert_ulps(on_vulkan(vkt.digamma, pos), mp(mpmath.digamma, pos), pos, 2)
    special = np.array([0.0, -0.0, INF, -INF, NAN, -1.0, -2.0, 1.0])
    np.testing.assert_array_equal(on_vulkan(vkt.digamma, special),
                                  [-INF, INF, INF, NAN, NAN, NAN, NAN, -0.5772156649015329])
    neg = -np.r_[r.uniform(0, 30, 800), 10 ** r.uniform(-15, 6, 200)]
    neg = neg[neg != np.floor(neg)]
    ref = mp(mpmath.digamma, neg)
    reflected = mp(lambda v: mpmath.digamma(1 - v), neg)
    terms = np.maximum(np.abs(reflected), np.abs(mp(lambda v: mpmath.pi * mpmath.cot(mpmath.pi * v), neg)))
    assert reflection_ulps(on_vulkan(vkt.digamma, neg), ref, neg, terms).max() <= 3


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


erfc = np.vectorize(math.erfc)
# The ops built on them, against their formulas in NumPy's float64 (those of vkt's CPU kernels): (name, vkt, NumPy,
# ulps, scale). Where a formula cancels (1 + tanh(y) for y near -3, x - tanh(x) near 0), an ulp of its terms is more
# than an ulp of the result: there the error is bounded by `bound` ulps of scale(x) instead.
COMPOSITE = [
    ("sigmoid", lambda x: x.sigmoid(), sigmoid, 2, None),
    ("silu", F.silu, lambda x: x * sigmoid(x), 3, None),
    ("gelu", F.gelu, lambda x: 0.5 * x * erfc(x * -0.7071067811865476), 3, None),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))), 3, np.abs),
    ("softplus", F.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(x))), 2, None),
    ("mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), 4, None),
    ("logsigmoid", F.logsigmoid, lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), 2, None),
    ("elu", F.elu, lambda x: np.where(x > 0, x, np.expm1(x)), 2, None),
    ("selu", F.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)), 2, None),
    ("celu", lambda x: F.celu(x, alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x / 0.5)), 2, None),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), 3, np.abs),
    ("logaddexp", lambda x: vkt.logaddexp(x, x.flip(0)), lambda x: np.logaddexp(x, x[::-1]), 2,
     lambda x: np.maximum(np.abs(x), np.abs(x[::-1]))),
    ("xlogy", lambda x: vkt.xlogy(x, x.abs()), lambda x: np.where(x == 0, 0, x * np.log(np.abs(x))), 2, None),
]


@pytest.mark.parametrize("name,f,ref,bound,scale", COMPOSITE, ids=[c[0] for c in COMPOSITE])
def test_composite(f64, name, f, ref, bound, scale):
    r = rng_of(name)
    x = np.r_[spread(r, -10, 2.9), r.uniform(-30, 30, 1000), SPECIAL]
    with np.errstate(all="ignore"):
        want = ref(x)
        got = on_vulkan(f, x)
        d = ulps(got, want)
        if scale is not None:
            s = scale(x)
            d = np.where(np.isfinite(s) & np.isfinite(want), np.minimum(d, np.abs(got - want) / np.spacing(s)), d)
    i = int(np.argmax(d))
    assert d[i] <= bound, f"{d[i]} ulp at {x[i]!r}: got {got[i]!r}, want {want[i]!r}"


# The special functions NumPy lacks, against vkt's CPU kernels (cpu/math.c: float64, C's libm underneath), whose
# formulas the shaders share: (name, vkt, arguments, relative tolerance, absolute tolerance).
SPECIAL_FUNCTIONS = [
    ("polygamma1", lambda x: vkt.polygamma(1, x), lambda r: r.uniform(-10, 20, 1000), 1e-13, 0),
    ("polygamma3", lambda x: vkt.polygamma(3, x), lambda r: r.uniform(-10, 20, 1000), 1e-13, 0),
    ("logit", lambda x: x.logit(), lambda r: r.uniform(0, 1, 1000), 4e-16, 0),
    ("sinc", lambda x: x.sinc(), lambda r: r.uniform(-20, 20, 1000), 1e-15, 0),
    ("entr", vkt.special.entr, lambda r: np.abs(spread(r, -300, 300, 1000)), 4e-16, 0),
    ("ndtr", vkt.special.ndtr, lambda r: r.uniform(-38, 10, 1000), 1e-15, 0),
    ("log_ndtr", vkt.special.log_ndtr, lambda r: r.uniform(-1e3, 10, 1000), 1e-15, 0),
    # Newton's steps leave ndtri(1/2) at 2e-18 or so, not 0
    ("ndtri", vkt.special.ndtri, lambda r: np.r_[r.uniform(0, 1, 1000), 10 ** r.uniform(-300, -1, 200)], 1e-14, 1e-16),
    ("i0", vkt.i0, lambda r: r.uniform(-700, 700, 1000), 1e-14, 0),
    ("i0e", vkt.special.i0e, lambda r: r.uniform(-700, 700, 1000), 1e-14, 0),
    ("i1", vkt.special.i1, lambda r: r.uniform(-700, 700, 1000), 1e-14, 0),
    ("i1e", vkt.special.i1e, lambda r: r.uniform(-700, 700, 1000), 1e-14, 0),
]


@pytest.mark.parametrize("name,f,args,rtol,atol", SPECIAL_FUNCTIONS, ids=[c[0] for c in SPECIAL_FUNCTIONS])
def test_special_functions(f64, name, f, args, rtol, atol):
    x = np.r_[args(rng_of(name)), SPECIAL]
    want = f(vkt.tensor(x)).numpy()
    assert_close(on_vulkan(f, x), want, rtol=rtol, atol=atol)


def softmax_rows(rng):
    """Rows of several scales, one with -inf (a mask) and one with a huge value."""
    x = rng.standard_normal((6, 257)) * np.array([[1e-3], [1], [30], [300], [1], [1]])
    x[4, ::3] = -INF
    x[5, 7] = 700.0
    return x


def test_softmax_family(f64):
    """Against the same two passes in NumPy: max m and s = sum exp(x - m), then exp(x - m) / s, (x - m) - log(s)."""
    x = softmax_rows(rng_of("softmax"))
    t = vkt.tensor(x, device="vulkan")
    with np.errstate(invalid="ignore"):  # sin(-inf): a row of NaN
        pairs = [(t, x), ((t.sin() * 3), np.sin(x) * 3)]  # the second computed in the softmax's load
    for got, v in pairs:
        m = v.max(1, keepdims=True)
        s = np.exp(v - m).sum(1, keepdims=True)
        assert_close(got.softmax(1), np.exp(v - m) / s, rtol=1e-15, atol=1e-300)
        # x - m - log(s) cancels: its rounding is an ulp of the row's scale, not of the result (the H100's sums,
        # in another order than lavapipe's, differ by 2.8e-14 at -0.46 in rows near -700)
        scale = np.abs(m[np.isfinite(m)]).max()
        assert_close(got.log_softmax(1), (v - m) - np.log(s), rtol=1e-15, atol=4e-16 * scale)
        assert_close(got.logsumexp(1), (m + np.log(s))[:, 0], rtol=1e-15, atol=0)


def losses(x, target, weight=None, smoothing=0.0, prob=False):
    """cross_entropy's mean in NumPy: log_softmax, the (smoothed, weighted) target, the weighted mean."""
    logp = x - (x.max(1, keepdims=True) + np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)))
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    if prob:
        q = target * (1 - smoothing) + smoothing / c
        return -(q * w * logp).sum(1).mean()
    onehot = np.eye(c)[target]
    q = onehot * (1 - smoothing) + smoothing / c
    return -(q * w * logp).sum() / w[target].sum()


def test_losses(f64):
    r = rng_of("losses")
    x = r.standard_normal((67, 13)) * 4
    target = r.integers(0, 13, 67)
    weight = r.uniform(0.5, 2, 13)
    probs = np.exp(x[::-1]) / np.exp(x[::-1]).sum(1, keepdims=True)
    xv, tv, wv = (vkt.tensor(a, device="vulkan") for a in (x, target, weight))
    assert_close(F.cross_entropy(xv, tv), losses(x, target), rtol=1e-14, atol=0)
    assert_close(F.cross_entropy(xv, tv, weight=wv, label_smoothing=0.1), losses(x, target, weight, 0.1), rtol=1e-14,
                 atol=0)
    assert_close(F.cross_entropy(xv, vkt.tensor(probs, device="vulkan"), label_smoothing=0.2),
                 losses(x, probs, None, 0.2, prob=True), rtol=1e-14, atol=0)
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    assert_close(F.nll_loss(vkt.tensor(logp, device="vulkan"), tv), -logp[np.arange(67), target].mean(), rtol=1e-14,
                 atol=0)


def test_fused_chains(f64, fusion):
    """Chains of float64 transcendentals fuse into one kernel (and into a reduction's load), as float32's do."""
    r = rng_of("chains")
    x = r.uniform(-3, 3, 1000)
    t = vkt.tensor(x, device="vulkan")
    assert_close((t.exp() * 2).sin().sum(), np.sin(np.exp(x) * 2).sum(), rtol=1e-13, atol=0)
    got = (t.sigmoid().log1p() * t.atan()).tanh().abs().pow(2.5) + vkt.lgamma(t.abs() + 1)
    want = np.abs(np.tanh(np.log1p(sigmoid(x)) * np.arctan(x))) ** 2.5 + mp(mpmath.loggamma, np.abs(x) + 1)
    assert_close(got, want, rtol=1e-14, atol=1e-15)  # the sum cancels where lgamma(|x| + 1) < 0
    stats = vkt.vulkan.kernel_stats()
    assert stats["fused_launches"] >= 2 and any("sin" in ops for ops, _ in stats["fused_kernels"]), stats


GRADCHECKED = [
    ("exp_sin", lambda x: (x.exp() * 2).sin(), 1),
    ("tanh_log1p_erf", lambda x: x.tanh().log1p() * x.erf(), 1),
    ("pow_atan2", lambda x, y: vkt.atan2(x, y) * x.abs().pow(y), 2),
    ("lgamma_digamma", lambda x: (x.abs() + 0.5).lgamma() + (x.abs() + 0.5).digamma(), 1),
    ("gelu_softplus", lambda x: F.gelu(x) + F.softplus(x).cosh(), 1),
    ("log_softmax", lambda x: x.sinh().log_softmax(-1), 1),
    ("cross_entropy", lambda x: F.cross_entropy(x, vkt.tensor([1, 0, 3], device="vulkan"), label_smoothing=0.1), 1),
]


@pytest.mark.parametrize("name,f,n", GRADCHECKED, ids=[c[0] for c in GRADCHECKED])
def test_gradcheck(f64, name, f, n):
    r = rng_of(name)
    inputs = tuple(vkt.tensor(r.uniform(-1.5, 1.5, (3, 4)), device="vulkan", requires_grad=True) for _ in range(n))
    assert vkt.autograd.gradcheck(f, inputs)
