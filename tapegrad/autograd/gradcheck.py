"""gradcheck: compare the analytical Jacobian (reverse sweeps) with central finite differences.

As torch.autograd.gradcheck in its default (slow) mode: for every input that requires grad and
every output, the numerical Jacobian (one column per perturbed input element,
(f(x + eps) - f(x - eps)) / (2 eps), in the output's dtype) is compared with the analytical one
(one reverse sweep per output element, with a one-hot grad_output) using
|analytical - numerical| <= atol + rtol * |numerical|.  A mismatch raises GradcheckError (a
RuntimeError) with PyTorch's "Jacobian mismatch for output j with respect to input i" message, or
returns False with raise_exception=False.  The analytical Jacobian is computed twice to detect a
non-reentrant backward (nondet_tol), and backward must map zero output gradients to zero.

Complex values are compared in PyTorch's convention (a gradient is dL/dx + i dL/dy for a real
loss L of z = x + iy): each complex output element k gives two columns, the gradient of Re y_k
(seed 1) and of Im y_k (seed i), and a complex input's numerical rows are d/dx + i d/dy of them.
"""
from __future__ import annotations

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


def _numerical_jacobian(func, inputs, outputs, eps):
    """{(input index, output index): ndarray (input numel, output columns)} (see the module
    docstring for complex values)."""
    jac = {}
    for i, inp in enumerate(inputs):
        if not (_is_tensor(inp) and inp.requires_grad):
            continue
        arr = inp._array
        complex_input = arr.dtype.kind == "c"
        cols = {j: np.zeros((arr.size, _columns(out)),
                            dtype=np.result_type(out._array.dtype, arr.dtype))
                for j, out in enumerate(outputs) if _is_tensor(out)}

        def derivative(idx, step):
            orig = arr[idx].copy()
            # (grad mode stays on: gradgradcheck's function differentiates inside)
            arr[idx] = orig - step
            lo = [o._array.copy() if _is_tensor(o) else None for o in _outputs(func, inputs)]
            arr[idx] = orig + step
            hi = [o._array.copy() if _is_tensor(o) else None for o in _outputs(func, inputs)]
            arr[idx] = orig
            return {j: np.asarray((hi[j] - lo[j]) / (2 * eps)).reshape(-1) for j in cols}

        for k, idx in enumerate(np.ndindex(arr.shape)):
            along_x = derivative(idx, eps)
            along_y = derivative(idx, eps * 1j) if complex_input else None
            for j, c in cols.items():
                dx = along_x[j]
                if c.shape[1] == dx.size:           # a real output
                    c[k] = dx if along_y is None else dx + 1j * along_y[j]
                elif along_y is None:               # complex output, real input
                    c[k] = np.concatenate([dx.real, dx.imag])
                else:
                    dy = along_y[j]
                    c[k] = np.concatenate([dx.real + 1j * dy.real, dx.imag + 1j * dy.imag])
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
                            dtype=np.result_type(out._array.dtype, inputs[i]._array.dtype))
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
    """{(input index, output index): ndarray (input numel, output numel)}, one forward-mode
    evaluation (a dual input with a one-hot tangent) per input element."""
    from . import forward_ad
    jac = {}
    for i, inp in enumerate(inputs):
        if not (_is_tensor(inp) and inp.requires_grad):
            continue
        cols = {j: np.zeros((inp._array.size, out._array.size), dtype=out._array.dtype)
                for j, out in enumerate(outputs) if _is_tensor(out)}
        for k in range(inp._array.size):
            onehot = np.zeros(inp._array.size, dtype=inp._array.dtype)
            onehot[k] = 1
            with forward_ad.dual_level():
                dual = forward_ad.make_dual(inp, _core.wrap_array(onehot.reshape(inp.shape)))
                args = inputs[:i] + (dual,) + inputs[i + 1:]
                for j, out in enumerate(_outputs(func, args)):
                    if j in cols:
                        tangent = forward_ad.unpack_dual(out).tangent
                        if tangent is not None:
                            cols[j][k] = tangent._array.reshape(-1)
        for j, c in cols.items():
            jac[(i, j)] = c
    return jac


def _fmt(arr):
    from ..creation import tensor
    return repr(tensor(arr))


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of `func` at `inputs` (tensors requiring grad, best in float64) against
    central finite differences.  Returns True, or raises GradcheckError (returns False with
    raise_exception=False).  fast_mode runs the full (slow mode) check; ``check_forward_ad``
    also compares the forward-mode Jacobian (dual tensors, one per input element); batched
    checks are not supported."""
    if check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError("tapegrad.autograd.gradcheck: batched checks "
                                  "(check_batched_grad, check_batched_forward_grad) are not "
                                  "supported")
    tupled = _as_tuple(inputs)
    _check_inputs(tupled)
    outputs = _outputs(func, tupled)
    numerical = _numerical_jacobian(func, tupled, outputs, eps)
    if check_forward_ad:
        forward = _forward_jacobian(func, tupled, outputs)
        for (i, j), a in forward.items():
            n = numerical[(i, j)]
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                return _fail(f"Jacobian computed with forward mode mismatch for output {j} with "
                             f"respect to input {i},\nnumerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n",
                             raise_exception)
    if not any(_is_tensor(o) and o.requires_grad for o in outputs):
        for (i, j), n in numerical.items():
            if not np.allclose(n, 0, rtol=rtol, atol=atol):
                return _fail("Numerical gradient for function expected to be zero",
                             raise_exception)
        return True
    if not check_backward_ad:
        return True
    analytical = _analytical_jacobian(tupled, outputs)
    again = _analytical_jacobian(tupled, outputs)
    for key, a in analytical.items():
        i, j = key
        n = numerical[key]
        if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
            return _fail(f"Jacobian mismatch for output {j} with respect to input {i},\n"
                         f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n", raise_exception)
        if not np.allclose(again[key], a, rtol=0, atol=nondet_tol, equal_nan=True):
            return _fail("Backward is not reentrant, i.e., running backward with same input and "
                         "grad_output multiple times gives different values, although analytical "
                         "gradient matches numerical gradient.The tolerance for nondeterminism was "
                         f"{nondet_tol}.", raise_exception)
    if check_grad_dtypes:
        from . import grad as autograd_grad
        diff = [x for x in tupled if _is_tensor(x) and x.requires_grad]
        outs = [o for o in outputs if _is_tensor(o) and o.requires_grad]
        grads = autograd_grad(outs, diff, [_core.wrap_array(np.ones(o._array.shape,
                                                                    o._array.dtype))
                                           for o in outs], retain_graph=True, allow_unused=True)
        for x, g in zip(diff, grads):
            if g is not None and g.dtype != x.dtype:
                return _fail("Gradient has dtype mismatch", raise_exception)
    if check_undefined_grad:
        from . import grad as autograd_grad
        diff = [x for x in tupled if _is_tensor(x) and x.requires_grad]
        outs = [o for o in outputs if _is_tensor(o) and o.requires_grad]
        zeros = [_core.wrap_array(np.zeros(o._array.shape, o._array.dtype)) for o in outs]
        grads = autograd_grad(outs, diff, zeros, retain_graph=True, allow_unused=True)
        for g in grads:
            if g is not None and np.any(g._array != 0):
                return _fail('Expected backward function to handle undefined output grads. Please '
                             'look at "Notes about undefined output gradients" in '
                             '"tools/autograd/derivatives.yaml"', raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check the second derivatives of `func`: gradcheck of the function that maps (inputs,
    grad_outputs) to the gradients of func's outputs (needs create_graph support for every op
    on the way; raises NotImplementedError naming an op that lacks it)."""
    from . import grad as autograd_grad
    tupled = _as_tuple(inputs)
    num_outputs = [o for o in _as_tuple(func(*tupled)) if _is_tensor(o) and o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _core.wrap_array(rng.standard_normal(o._array.shape).astype(o._array.dtype), True)
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
                     check_grad_dtypes=check_grad_dtypes)
