"""gradcheck: compare the analytical Jacobian (reverse sweeps) with central finite differences.

As torch.autograd.gradcheck in its default (slow) mode: for every input that requires grad and
every output, the numerical Jacobian (one column per perturbed input element,
(f(x + eps) - f(x - eps)) / (2 eps), in the output's dtype) is compared with the analytical one
(one reverse sweep per output element, with a one-hot grad_output) using
|analytical - numerical| <= atol + rtol * |numerical|.  A mismatch raises GradcheckError (a
RuntimeError) with PyTorch's "Jacobian mismatch for output j with respect to input i" message, or
returns False with raise_exception=False.  The analytical Jacobian is computed twice to detect a
non-reentrant backward (nondet_tol); then, as PyTorch's, backward must map zero output gradients
to zero input gradients ("backward not multiplied by grad_output") and, on fresh calls, handle
undefined output gradients (check_undefined_grad).
check_batched_grad compares a vmap over the backward with one backward per grad_output (two random
ones), check_batched_forward_grad a vmap over the function of a dual input with one forward-mode
evaluation per tangent, as PyTorch's.

Complex values are compared in PyTorch's convention (a gradient is dL/dx + i dL/dy for a real
loss L of z = x + iy): each complex output element k gives two columns, the gradient of Re y_k
(seed 1) and of Im y_k (seed i), and a complex input's numerical rows are d/dx + i d/dy of them.
"""
from __future__ import annotations as _annotations

import warnings

import numpy as np

from .. import _core

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a check fails."""


def _is_tensor(x) -> bool:
    return isinstance(x, _core.TensorBase)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _check_inputs(tupled_inputs) -> bool:
    any_requires = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if inp._array.dtype not in (np.float64, np.complex128):
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision "
                              "floating point or complex. This check will likely fail if all the "
                              "inputs are not of double precision floating point or complex. ",
                              UserWarning, stacklevel=3)
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                # (perturbing one element would move all those sharing its memory)
                raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck "
                                   "only supports inputs that are non-overlapping to be able to "
                                   "compute the numerical gradients correctly. You should call "
                                   ".contiguous on the input before passing it to gradcheck.")
            any_requires = True
    if not any_requires:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    return True


def _outputs(func, inputs):
    return tuple(o for o in _as_tuple(func(*inputs)))


def _columns(out):
    """How many Jacobian columns an output has: one per element, two when complex."""
    return out._array.size * (2 if out._array.dtype.kind == "c" else 1)


def _difference(hi, lo):
    """hi - lo of two output values; a bool output raises PyTorch's error (its numerical
    Jacobian subtracts tensors), not numpy's."""
    if hi.dtype == np.bool_:
        _core.wrap_array(hi) - _core.wrap_array(lo)
    return hi - lo


def _jacobian_row(columns, dx, dy):
    """One input element's Jacobian row from an output's derivatives along it: ``dx`` along
    its real direction, ``dy`` along its imaginary one (None for a real input); see the module
    docstring for the layout of complex values."""
    if columns == dx.size:                  # a real output
        return dx if dy is None else dx + 1j * dy
    if dy is None:                          # complex output, real input
        return np.concatenate([dx.real, dx.imag])
    return np.concatenate([dx.real + 1j * dy.real, dx.imag + 1j * dy.imag])


def _jacobian_dtype(own, other) -> np.dtype:
    """A Jacobian's dtype: `own` (the output's for the numerical one, the input's for the
    analytical one, as PyTorch's, which prints them so), complex when either side is."""
    if np.dtype(own).kind == "c" or np.dtype(other).kind == "c":
        return np.result_type(own, other)
    return np.dtype(own)


def _numerical_jacobian(func, inputs, outputs, eps):
    """{(input index, output index): ndarray (input numel, output columns)} (see the module
    docstring for complex values)."""
    jac = {}
    for i, inp in enumerate(inputs):
        if not (_is_tensor(inp) and inp.requires_grad):
            continue
        arr = inp._array
        complex_input = arr.dtype.kind == "c"
        # in the output's dtype (the analytical Jacobian is in the input's), as PyTorch's
        cols = {j: np.zeros((arr.size, _columns(out)),
                            dtype=_jacobian_dtype(out._array.dtype, arr.dtype))
                for j, out in enumerate(outputs) if _is_tensor(out)}

        def derivative(idx, step):
            orig = arr[idx].copy()
            # (grad mode stays on: gradgradcheck's function differentiates inside)
            arr[idx] = orig - step
            lo = [o._array.copy() if _is_tensor(o) else None for o in _outputs(func, inputs)]
            arr[idx] = orig + step
            hi = [o._array.copy() if _is_tensor(o) else None for o in _outputs(func, inputs)]
            arr[idx] = orig
            return {j: np.asarray(_difference(hi[j], lo[j]) / (2 * eps)).reshape(-1)
                    for j in cols}

        for k, idx in enumerate(np.ndindex(arr.shape)):
            along_x = derivative(idx, eps)
            along_y = derivative(idx, eps * 1j) if complex_input else None
            for j, c in cols.items():
                c[k] = _jacobian_row(c.shape[1], along_x[j],
                                     None if along_y is None else along_y[j])
        for j, c in cols.items():
            jac[(i, j)] = c
    return jac


def _analytical_jacobian(inputs, outputs):
    """{(input index, output index): ndarray (input numel, output numel)}, one sweep per output
    element (one-hot grad_outputs, retain_graph)."""
    from . import grad as autograd_grad
    diff_idx = [i for i, inp in enumerate(inputs) if _is_tensor(inp) and inp.requires_grad]
    diff_inputs = [inputs[i] for i in diff_idx]
    jac = {}
    for j, out in enumerate(outputs):
        if not _is_tensor(out):
            continue
        cols = {i: np.zeros((inputs[i]._array.size, _columns(out)),
                            dtype=_jacobian_dtype(inputs[i]._array.dtype, out._array.dtype))
                for i in diff_idx}
        size = out._array.size
        if out.requires_grad:
            for k in range(_columns(out)):
                onehot = np.zeros(size, dtype=out._array.dtype)
                onehot[k % size] = 1 if k < size else 1j     # seed i: the gradient of Im y_k
                seed = _core.wrap_array(onehot.reshape(out._array.shape))
                grads = autograd_grad(out, diff_inputs, grad_outputs=seed, retain_graph=True,
                                      allow_unused=True)
                for i, g in zip(diff_idx, grads):
                    if g is None:
                        continue
                    if tuple(g.shape) != tuple(inputs[i].shape):
                        raise GradcheckError("Gradient has incorrect size")
                    cols[i][:, k] = g._array.reshape(-1)
        for i, c in cols.items():
            jac[(i, j)] = c
    return jac


def _forward_jacobian(func, inputs, outputs):
    """{(input index, output index): ndarray laid out as _numerical_jacobian's}, one
    forward-mode evaluation (a dual input with a one-hot tangent) per input element, and one
    more along its imaginary direction for a complex input."""
    from . import forward_ad
    jac = {}
    for i, inp in enumerate(inputs):
        if not (_is_tensor(inp) and inp.requires_grad):
            continue
        arr = inp._array
        # in the output's dtype (the analytical Jacobian is in the input's), as PyTorch's
        cols = {j: np.zeros((arr.size, _columns(out)),
                            dtype=_jacobian_dtype(out._array.dtype, arr.dtype))
                for j, out in enumerate(outputs) if _is_tensor(out)}

        def derivative(k, direction):
            onehot = np.zeros(arr.size, dtype=arr.dtype)
            onehot[k] = direction
            found = {}
            with forward_ad.dual_level():
                dual = forward_ad.make_dual(inp, _core.wrap_array(onehot.reshape(arr.shape)))
                args = inputs[:i] + (dual,) + inputs[i + 1:]
                for j, out in enumerate(_outputs(func, args)):
                    if j in cols:
                        tangent = forward_ad.unpack_dual(out).tangent
                        found[j] = (np.zeros(out._array.size, out._array.dtype)
                                    if tangent is None else tangent._array.reshape(-1))
            return found

        for k in range(arr.size):
            along_x = derivative(k, 1)
            along_y = derivative(k, 1j) if arr.dtype.kind == "c" else None
            for j, c in cols.items():
                c[k] = _jacobian_row(c.shape[1], along_x[j],
                                     None if along_y is None else along_y[j])
        for j, c in cols.items():
            jac[(i, j)] = c
    return jac


def _fmt(arr):
    from ..creation import tensor
    return repr(tensor(arr))


def _refuse_option_combinations(*rules) -> None:
    """PyTorch's AssertionError for the first (violated, message) rule that holds: options that
    need another option (gradcheck's and gradgradcheck's)."""
    for violated, message in rules:
        if violated:
            raise AssertionError(message)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of `func` at `inputs` (tensors requiring grad, best in float64) against
    central finite differences.  Returns True, or raises GradcheckError (returns False with
    raise_exception=False).  fast_mode runs the full (slow mode) check; ``check_forward_ad``
    also compares the forward-mode Jacobian (dual tensors, one per input element)."""
    _refuse_option_combinations(
        (not (check_forward_ad or check_backward_ad),
         "Expected at least one of check_forward_ad or check_backward_ad to be True"),
        (check_batched_grad and not check_backward_ad,
         "Setting check_batched_grad=True requires check_backward_ad to be True"),
        (check_batched_forward_grad and not check_forward_ad,
         "Setting check_batched_forward_grad=True requires check_forward_ad to be True"))
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                          check_grad_dtypes, check_batched_grad, check_batched_forward_grad,
                          check_forward_ad, check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_grad_dtypes, check_batched_grad, check_batched_forward_grad,
               check_forward_ad, check_backward_ad):
    tupled = _as_tuple(inputs)
    _check_inputs(tupled)
    outputs = _outputs(func, tupled)
    numerical = _numerical_jacobian(func, tupled, outputs, eps)
    if check_forward_ad:
        forward = _forward_jacobian(func, tupled, outputs)
        for (i, j), a in forward.items():
            n = numerical[(i, j)]
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {j} with respect "
                    f"to input {i},\nnumerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")
    if check_batched_forward_grad:
        _test_batched_forward_grad(func, tupled)
    if not any(_is_tensor(o) and o.requires_grad for o in outputs):
        for (i, j), n in numerical.items():
            if not np.allclose(n, 0, rtol=rtol, atol=atol):
                raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    if not check_backward_ad:
        return True
    analytical = _analytical_jacobian(tupled, outputs)
    again = _analytical_jacobian(tupled, outputs)
    for key, a in analytical.items():
        i, j = key
        n = numerical[key]
        if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
            raise GradcheckError(f"Jacobian mismatch for output {j} with respect to input {i},\n"
                                 f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")
        if not np.allclose(again[key], a, rtol=0, atol=nondet_tol, equal_nan=True):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.")
    if check_batched_grad:
        for j, out in enumerate(outputs):
            if _is_tensor(out) and out.requires_grad:
                _test_batched_grad(tupled, out, j)
    if check_grad_dtypes:
        from . import grad as autograd_grad
        diff = [x for x in tupled if _is_tensor(x) and x.requires_grad]
        outs = [o for o in outputs if _is_tensor(o) and o.requires_grad]
        grads = autograd_grad(outs, diff, [_core.wrap_array(np.ones(o._array.shape,
                                                                    o._array.dtype))
                                           for o in outs], retain_graph=True, allow_unused=True)
        for x, g in zip(diff, grads):
            if g is not None and g.dtype != x.dtype:
                raise GradcheckError("Gradient has dtype mismatch")
    _test_backward_mul_by_grad_output(tupled, outputs)
    if check_undefined_grad:
        _test_undefined_backward_mode(func, tupled, outputs)
    return True


def _differentiable(outputs):
    return [o for o in outputs if _is_tensor(o) and o.requires_grad]


def _zero_grads(outs):
    return [_core.wrap_array(np.zeros(o._array.shape, o._array.dtype)) for o in outs]


def _test_backward_mul_by_grad_output(inputs, outputs) -> None:
    """PyTorch's check that backward scales by grad_output: zero grad_outputs must give zero
    input gradients of the inputs' dtypes and shapes (a backward that ignores grad_output passes
    the one-hot Jacobian sweeps of a scalar output).  The last use of the first call's graph, so
    it is not retained (as PyTorch's)."""
    from . import grad as autograd_grad
    diff = [x for x in inputs if _is_tensor(x) and x.requires_grad]
    outs = _differentiable(outputs)
    grads = autograd_grad(outs, diff, _zero_grads(outs), allow_unused=True)
    for g, x in zip(grads, diff):
        if g is None:
            continue
        if np.any(g._array != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if tuple(g.shape) != tuple(x.shape):
            raise GradcheckError("grad is incorrect size")


_UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in ' \
    '"tools/autograd/derivatives.yaml"'


def _test_undefined_backward_mode(func, inputs, outputs) -> None:
    """PyTorch's undefined-output-gradient check: on a fresh call of func, all output gradients
    undefined, then (with several differentiable outputs) one at a time on a fresh call each;
    every input gradient must be None or zero.  PyTorch marks an output's gradient undefined
    (a custom Function receives zeros, or None after ctx.set_materialize_grads(False)); here it
    is a zero gradient, which is what a materializing backward receives, with the same forward
    and backward calls."""
    from . import grad as autograd_grad
    diff = [x for x in inputs if _is_tensor(x) and x.requires_grad]
    rounds = 1 + (len(outputs) if len(_differentiable(outputs)) > 1 else 0)
    # (all the calls first, then the sweeps: PyTorch's order, seen by a printing Function)
    for outs in [_differentiable(_outputs(func, inputs)) for _ in range(rounds)]:
        try:
            grads = autograd_grad(outs, diff, _zero_grads(outs), allow_unused=True)
        except RuntimeError as e:
            _warn_bc_breaking()
            raise GradcheckError("Expected backward function to handle undefined output grads. "
                                 + _UNDEFINED_NOTE) from e
        if any(g is not None and np.any(g._array != 0) for g in grads):
            _warn_bc_breaking()
            raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                 "output grads are undefined or zero. " + _UNDEFINED_NOTE)


def _warn_bc_breaking() -> None:
    warnings.warn("Backwards compatibility: New undefined gradient support checking feature is "
                  "enabled by default, but it may break existing callers of this function. If "
                  "this is true for you, you can call this function with "
                  '"check_undefined_grad=False" to disable the feature', stacklevel=4)


FAILED_BATCHED_GRAD_MSG = (
    "gradcheck or gradgradcheck failed while testing batched gradient computation (a vmap over "
    "the backward): call gradcheck/gradgradcheck with `check_batched_grad=False` to skip it.")
FAILED_BATCHED_GRAD_MSG_FWD_AD = (
    "gradcheck failed while testing batched gradient computation with forward-mode AD (a vmap "
    "over the function of a dual input): call gradcheck with `check_batched_forward_grad=False` "
    "to skip it.")


def _batched_mismatch(output_idx, input_idx, res, exp, forward):
    return GradcheckError(
        f"For output {output_idx} and input {input_idx}:\n\n"
        f"{FAILED_BATCHED_GRAD_MSG_FWD_AD if forward else FAILED_BATCHED_GRAD_MSG}\n\n"
        f"Got:\n{res}\n\nExpected:\n{exp}")


def _compare_batched(result, expected, output_idx, forward):
    from .. import allclose
    for k, (res, exp) in enumerate(zip(result, expected)):
        if not allclose(res, exp):
            raise _batched_mismatch(k if forward else output_idx, k, res, exp, forward)


def _test_batched_grad(inputs, output, output_idx):
    """One vmap over the backward of ``output`` against one backward per grad_output (two
    random ones), as PyTorch's check."""
    from . import grad as autograd_grad
    from .. import randn_like, stack, zeros_like
    from ..func import vmap
    diff = [x for x in inputs if _is_tensor(x) and x.requires_grad]

    def vjp(v):
        grads = autograd_grad(output, diff, v, retain_graph=True, allow_unused=True)
        return tuple(zeros_like(x) if g is None else g for g, x in zip(grads, diff))

    grad_outputs = [randn_like(output) for _ in range(2)]
    expected = [stack(shards) for shards in zip(*[vjp(g) for g in grad_outputs])]
    try:
        result = vmap(vjp)(stack(grad_outputs))
    except RuntimeError as ex:
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n"
                             f"{FAILED_BATCHED_GRAD_MSG}") from ex
    _compare_batched(result, expected, output_idx, False)


def _test_batched_forward_grad(func, inputs):
    """For each input that requires grad: the tangents of func's outputs for two random
    tangents, from one vmap over func of a dual input (batched primal and tangents) against
    one forward-mode evaluation per tangent, as PyTorch's check."""
    from . import forward_ad
    from .. import randn_like, stack, zeros_like
    from ..func import vmap
    for i, inp in enumerate(inputs):
        if not (_is_tensor(inp) and inp.requires_grad and
                (inp.is_floating_point() or inp.is_complex())):
            continue
        rest = tuple(x.detach() if _is_tensor(x) else x for x in inputs)

        def call(x):
            return _as_tuple(func(*(rest[:i] + (x,) + rest[i + 1:])))

        def tangents_of(outs):
            result = []
            for o in outs:
                if o is None:
                    continue
                t = forward_ad.unpack_dual(o).tangent
                result.append(zeros_like(o) if t is None else t)
            return tuple(result)

        tangents = [randn_like(inp) for _ in range(2)]
        expected = []
        for t in tangents:
            with forward_ad.dual_level():
                expected.append(tangents_of(call(forward_ad.make_dual(inp.detach(), t))))
        expected = [stack(shards) for shards in zip(*expected)]
        primal = inp.detach().unsqueeze(0).expand((2,) + tuple(inp.shape))
        try:
            with forward_ad.dual_level():
                outs = vmap(call)(forward_ad.make_dual(primal, stack(tangents)))
                result = tangents_of(outs)
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n"
                                 f"{FAILED_BATCHED_GRAD_MSG_FWD_AD}") from ex
        _compare_batched(result, expected, None, True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check the second derivatives of `func`: gradcheck of the function that maps (inputs,
    grad_outputs) to the gradients of func's outputs (needs create_graph support for every op
    on the way; raises NotImplementedError naming an op that lacks it).  Without grad_outputs,
    random ones in [-1, 1) (non-contiguous with gen_non_contig_grad_outputs), as PyTorch's;
    check_fwd_over_rev / check_rev_over_rev are gradcheck's check_forward_ad /
    check_backward_ad of that function."""
    from . import grad as autograd_grad
    _refuse_option_combinations(
        (not (check_fwd_over_rev or check_rev_over_rev),
         "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"),
        (check_undefined_grad and not check_rev_over_rev,
         "Setting check_undefined_grad=True requires check_rev_over_rev to be True"),
        (check_batched_grad and not check_rev_over_rev,
         "Setting check_batched_grad=True requires check_rev_over_rev to be True"))
    tupled = _as_tuple(inputs)
    if grad_outputs is None:
        num_outputs = [o for o in _as_tuple(func(*tupled)) if _is_tensor(o) and o.requires_grad]
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_grad_output(rng, o, gen_non_contig_grad_outputs)
                             for o in num_outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(tupled)

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _as_tuple(func(*ins)) if _is_tensor(o) and o.requires_grad]
        diff = [x for x in ins if _is_tensor(x) and x.requires_grad]
        grads = autograd_grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tupled + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)


def _random_grad_output(rng, out, noncontiguous):
    """A grad_output for ``out`` that requires grad: uniform in [-1, 1) (real and imaginary
    parts), float64 for an output that is neither floating point nor complex."""
    dtype = out._array.dtype if out._array.dtype.kind in "fc" else np.dtype(np.float64)
    shape = tuple(out.shape) + ((2,) if noncontiguous else ())
    values = rng.uniform(-1, 1, shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-1, 1, shape)
    values = values.astype(dtype)
    if noncontiguous:
        values = values[..., 0]        # every other element of a larger array
    return _core.wrap_array(values, True)
