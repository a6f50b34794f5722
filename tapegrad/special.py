"""tapegrad.special: the torch.special functions small scripts use, as names for tapegrad's ops
(expit is sigmoid, gammaln is lgamma, psi is digamma, ...) plus entr, ndtr, ndtri and xlog1py
composed from them (recorded, differentiable)."""
from __future__ import annotations as _annotations

import math as _math

import numpy as _np

from ._extra_ops import _wrap, _wrap_like, _xlog
from ._extra_functions import _torch_grad_fn_name
from .autograd.function import Function as _Function
from . import (digamma, erf, erfc, erfinv, exp2, expm1, i0, log1p, log_softmax, logit,
               logsumexp, polygamma, round, sinc, softmax, xlogy)
# (torch.special names these gammainc, gammaincc, gammaln, multigammaln and expit only)
from . import igamma as _igamma, igammac as _igammac, lgamma as _lgamma, mvlgamma as _mvlgamma
from . import sigmoid as _sigmoid
from ._more_math import zeta

# torch.special's softmax and log_softmax take no out= (torch's own do): the functions behind
# the top-level entries, which this namespace's install gives entries of their own
softmax = softmax.__out_arg_of__
log_softmax = log_softmax.__out_arg_of__
from ._special_functions import _float_input, ndtri  # noqa: F401  (ndtri: with erfinv, its first guess)
from . import float16 as _float16
from . import _core
from . import _special_bessel
from ._special_bessel import (  # noqa: F401
    airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t,
    chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w, erfcx,
    hermite_polynomial_h, hermite_polynomial_he, i0e, i1, i1e, laguerre_polynomial_l,
    legendre_polynomial_p, log_ndtr, modified_bessel_i0, modified_bessel_i1, modified_bessel_k0,
    modified_bessel_k1, scaled_modified_bessel_k0, scaled_modified_bessel_k1,
    shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w, spherical_bessel_j0)

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc",
           "gammaincc", "gammaln", "i0", "log1p", "log_softmax", "logit", "logsumexp",
           "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax",
           "xlog1py", "xlogy", "zeta", *_special_bessel.NAMES]

expit = _sigmoid
gammaln = _lgamma
psi = digamma
gammainc = _igamma          # the regularized lower incomplete gamma function
gammaincc = _igammac        # and the upper one
multigammaln = _mvlgamma    # (input, p): the log of the multivariate gamma function


class _Entr(_Function):
    """-x log x (0 at 0, -inf below, NaN at NaN: fuzz 60620763); gradient -(log x + 1): +inf at
    0, nan below, as PyTorch."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        arr = x._array
        with _core.IeeeResults():      # (log 0, and -x log x beyond the dtype's range)
            values = _np.where(arr > 0, -arr * _np.log(_np.where(arr > 0, arr, 1)),
                              _np.where(arr == 0, 0.0, _np.where(_np.isnan(arr), arr, -_np.inf)))
        return _wrap_like(values.astype(arr.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return -(x.log() + 1) * grad


_torch_grad_fn_name(_Entr, "SpecialEntrBackward0")


def entr(input):
    """-x * log(x) elementwise: 0 at 0, -inf below 0."""
    # integers and bool in the default float dtype, as PyTorch computes them (an integer input
    # kept its dtype and truncated -x log x: -1.386 printed as -1)
    result = _Entr.apply(_float_input(input, "entr_cpu", "special_entr"))
    return result


def ndtr(input):
    """The standard normal cumulative distribution function."""
    # (bool has no negation: integers and bool go to the default float dtype first)
    input = _float_input(input, "erf_vml_cpu", "special_ndtr")
    result = 0.5 * erfc(-input / _math.sqrt(2.0))
    return result


def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is nan): xlogy's op with log1p."""
    result = _xlog(input, other, "xlog1py")
    return result


from . import _out_arg  # noqa: E402
from ._public_calls import install as _install_public_calls  # noqa: E402
# the public functions' entry (out= with PyTorch's rules; the meta device dispatches there)
_install_public_calls(globals(), _out_arg.SPECIAL_OUT_FUNCTIONS, "special_")

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from ._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
