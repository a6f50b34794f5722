"""Higher-level functional autograd, as torch.autograd.functional: vjp, jacobian (reverse mode:
repeated reverse sweeps over one recorded forward, with retain_graph), and, built on
create_graph=True, hessian, vhp, hvp and jvp (jvp and hvp with PyTorch's double-backward
trick); jacobian(strategy="forward-mode") through torch.func.jacfwd.  Every differentiable op
supports create_graph (see tapegrad._core._graph_vjp_ops()).

The helpers and error messages follow PyTorch's module, so results and failures match.
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from ..grad_mode import enable_grad, set_grad_enabled, is_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _is_tensor(x) -> bool:
    # (a vmap's batched tensor counts: jacobian(strategy="forward-mode") and hessian's
    # forward-over-reverse call these functions under torch.func.jacfwd)
    from .._vmap import BatchedTensor
    return isinstance(x, (_core.TensorBase, BatchedTensor))


def _as_tuple(inp, arg_name, fn_name):
    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False
    for i, el in enumerate(inp):
        if not _is_tensor(el):
            if is_inp_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                                f"tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the given {arg_name} has type {type(el)}.")
    return is_inp_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if _is_tensor(inputs[0]):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. You should "
                    "ensure that your function is thrice differentiable and that the hessian "
                    "depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided "
                    f"function with respect to input {i} is independent of the input. This is "
                    "not allowed in strict mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode.")
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when running "
                "in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    from . import grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = (), ()
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (grad_out,)
    if len(new_outputs) == 0:
        return (None,) * len(inputs)
    return grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph)


def _zeros_like(t, requires_grad=False):
    return _core.wrap_array(np.zeros(t._array.shape, dtype=t._array.dtype), requires_grad)


_STAGE_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
                   "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STAGE_MESSAGES[stage].format(i=i))
            grads_i = _zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res += (grads_i,)
    return res


def _run_function(func, inputs, strict, name):
    """func(*inputs) as (is_outputs_tuple, outputs), checked as PyTorch's functional API does."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                          name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


def _prepare_v(v, create_graph, against, is_against_tuple, name, none_message):
    """v as a checked tuple matching `against`, or None where that is allowed."""
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, against, is_against_tuple)
    elif len(against) != 1 or against[0].numel() != 1:
        raise RuntimeError(none_message)
    return v


def _results(outputs, is_outputs_tuple, result, is_result_tuple, create_graph):
    """The (outputs, result) pair every product returns, detached unless create_graph."""
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_result_tuple))


_V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single "
                  "Tensor with a single element.")
_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a "
                 "single Tensor with a single element.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J): the vector-Jacobian product of func at inputs.  v may be omitted
    when func returns a single one-element tensor."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _run_function(func, inputs, strict, "vjp")
        v = _prepare_v(v, create_graph, outputs, is_outputs_tuple, "vjp", _V_NONE_OUTPUT)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return _results(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j a tensor of shape
    output_i.shape + input_j.shape (nested tuples when func takes / returns tuples).  One reverse
    sweep per output element over a single recorded forward."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      'and `strategy="forward-mode"` are not supported together '
                                      "(yet). Please either set `create_graph=False` or "
                                      '`strategy="reverse-mode"`.')
        return _forward_mode_jacobian(func, inputs, strict, vectorize)
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    from . import grad
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _run_function(func, inputs, strict, "jacobian")
        jac = ()
        for i, out in enumerate(outputs):
            per_input = tuple([] for _ in inputs)
            n = out.numel()
            if not vectorize and n and out.requires_grad and out.is_complex():
                # (PyTorch's per-element loop calls grad on each element with no grad_outputs)
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got {out.dtype}")
            for j in range(n):
                if out.requires_grad:
                    onehot = np.zeros(n, dtype=out._array.dtype)
                    onehot[j] = 1
                    vj = grad(out, inputs, _core.wrap_array(onehot.reshape(out._array.shape)),
                              retain_graph=True, create_graph=create_graph, allow_unused=True)
                else:
                    vj = (None,) * len(inputs)
                for k, (rows, vj_el, inp) in enumerate(zip(per_input, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent of "
                                f"input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        rows.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {k}. This is not allowed in strict mode.")
                        rows.append(_zeros_like(inp))
            jac += (tuple(_stack_rows(rows, tuple(out.shape) + tuple(inp.shape), inp)
                          for rows, inp in zip(per_input, inputs)),)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _forward_mode_jacobian(func, inputs, strict, vectorize):
    """jacobian(strategy="forward-mode"): every column at once, as torch.func.jacfwd computes
    it (a vmap of Jacobian-vector products over the inputs' basis), laid out as the
    reverse-mode result (output i, input j: output_i.shape + input_j.shape)."""
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        # (PyTorch's words, its missing space included)
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    from ..func import jacfwd
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    outputs_are_tuple = []

    def over_all_inputs(*args):
        out = func(*args)
        # (PyTorch's forward-mode check names no function: "given to None")
        is_tuple, out = _as_tuple(out, "outputs", None)
        outputs_are_tuple.append(is_tuple)
        return out

    per_output = jacfwd(over_all_inputs, argnums=tuple(range(len(inputs))))(*inputs)
    # (lists where reverse mode has tuples, as PyTorch's forward-mode result is).  Not
    # detached: as PyTorch's, a Jacobian that depends on tensors requiring grad (the module's
    # parameters) stays in their graph, so a loss on it backpropagates into them.
    jac = [list(per_input) for per_input in per_output]
    return _tuple_postprocess(jac, (outputs_are_tuple[0], is_inputs_tuple))


def _stack_rows(rows, shape, like):
    from .. import stack
    if not rows:
        return _core.wrap_array(np.zeros(shape, dtype=like._array.dtype))
    return stack(rows, 0).reshape(shape)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v): the Jacobian-vector product, by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, create_graph, inputs, is_inputs_tuple, "jvp", _V_NONE_INPUT)
        is_outputs_tuple, outputs = _run_function(func, inputs, strict, "jvp")
        grad_outputs = tuple(_zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return _results(outputs, is_outputs_tuple, result, is_outputs_tuple, create_graph)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar func at inputs (nested tuples for several inputs)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not _is_tensor(out):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # forward over reverse, as torch.func.hessian: the inner gradient by jacrev, which
            # the outer jacfwd's batched inputs pass through
            from ..func import jacrev
            jac = jacrev(ensure_single_output_function, argnums=tuple(range(len(inp))))(*inp)
        else:
            jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _single_scalar_output(outputs, is_outputs_tuple, fn_name):
    if is_outputs_tuple or not _is_tensor(outputs[0]):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def _scalar_function_gradient(func, inputs, v, create_graph, strict, name):
    """What vhp and hvp share: inputs and v checked, func run, its gradient with a graph.
    Returns (is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _prepare_v(v, create_graph, inputs, is_inputs_tuple, name, _V_NONE_INPUT)
    is_outputs_tuple, outputs = _run_function(func, inputs, strict, name)
    _single_scalar_output(outputs, is_outputs_tuple, name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T H): vector-Hessian product of scalar func."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac = _scalar_function_gradient(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return _results(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), H v): Hessian-vector product of scalar func (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac = _scalar_function_gradient(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(_zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return _results(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)
