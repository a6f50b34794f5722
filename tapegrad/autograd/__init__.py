"""tapegrad.autograd: PyTorch's functional autograd API on the compiled tape.

- grad(outputs, inputs, ...)      gradients of outputs w.r.t. inputs, returned (no .grad touched)
- backward(tensors, ...)          accumulate into leaves' .grad (Tensor.backward's engine)
- Function                        custom differentiable operations (forward/backward in Python)
- gradcheck                       compare analytical gradients with finite differences
- functional                      vjp, jacobian (and, with create_graph, hvp/vhp/hessian/jvp)
- detect_anomaly / set_detect_anomaly
- Variable                        the legacy constructor (returns a tensor)
- graph                           saved-tensor hooks, Node, GradientEdge (autograd/graph.py)
- SavedTensor                     grad_fn._raw_saved_* handles (register_hooks)
- is_multithreading_enabled / set_multithreading_enabled, enforce_grad_layout_policy
"""
from __future__ import annotations as _annotations

import sys as _sys

from .. import _core, _lazy
from ..grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode
from .function import Function
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable
from .grad_mode import (enforce_grad_layout_policy, is_multithreading_enabled,
                        set_multithreading_enabled)
from .._saved_attrs import SavedTensor
from . import function, anomaly_mode, grad_mode
# (torch.autograd re-exports these three of torch.overrides)
from ..overrides import handle_torch_function, has_torch_function, is_tensor_like  # noqa: F401

# Loaded on first use (PEP 562, tapegrad/_lazy.py): the op families import autograd.function
# while `import tapegrad` runs, and these would come with it (the profiler brings json and enum
# classes).  One line per submodule.
_LAZY = _lazy.table({
    "forward_ad": (),           # dual tensors by the double-backward trick
    "functional": (),
    "graph": (),                # saved-tensor hooks, Node, GradientEdge
    "profiler": ("ProfilerActivity", "kineto_available"),     # (torch.autograd has them too)
})

# torch.autograd's __all__ (what `from torch.autograd import *` binds; its submodules and
# SavedTensor are attributes only), less NestedIOFunction
__all__ = ["Variable", "Function", "backward", "grad_mode", "detect_anomaly", "enable_grad",
           "grad", "gradcheck", "gradgradcheck", "inference_mode", "no_grad", "set_detect_anomaly",
           "set_grad_enabled", "set_multithreading_enabled", "enforce_grad_layout_policy",
           "variable"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The sum of the gradients of `outputs` with respect to each of `inputs`, as a tuple (a
    dict when `inputs` is a dict).  Leaves' .grad are not touched.

    grad_outputs: the vector of the vector-Jacobian product, one per output (None for a scalar
    output: ones).  allow_unused: return None (zeros with materialize_grads) for inputs the
    outputs do not depend on instead of raising.  retain_graph defaults to create_graph.
    """
    if not only_inputs:
        import warnings
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    # inside a tapegrad.compile capture: a Program replays one forward and its backward()
    # phases, not a gradient taken inside the call (said here, where explain() otherwise named
    # only the sweep's tensors, which no op of the capture made)
    _core._capture_unsupported("it calls autograd.grad inside the call (a replay runs one "
                               "forward, then its backward() phases)")
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    # Sparse COO inputs are differentiated through their values (cheap tests first: this is
    # every grad call's path, and no sparse tensor exists before tapegrad._sparse_coo loads).
    sparse_coo = _sys.modules.get("tapegrad._sparse_coo")
    if sparse_coo is not None and (
            type(inputs) is sparse_coo.SparseTensor
            or (type(inputs) in (list, tuple) and sparse_coo.SparseTensor in map(type, inputs))):
        through_values = sparse_coo.grad_inputs_through_values(inputs)
        if through_values is not None:
            replaced, rebuild = through_values
            if materialize_grads and allow_unused is False:
                raise ValueError("Expected allow_unused to be True or not passed when "
                                 "materialize_grads=True, but got: allow_unused=False.")
            # unused inputs come back as None, materialized by rebuild (a sparse input's zero
            # gradient has no entries, as in PyTorch)
            return rebuild(grad(outputs, replaced, grad_outputs, retain_graph, create_graph,
                                True, allow_unused or materialize_grads, False, False),
                           materialize_grads)
    # Gradients of a weight looked up with embedding(sparse=True) are sparse: no sweep gives
    # them (tapegrad/_sparse_embedding.py, loaded by the first such lookup).
    sparse_lookups = _sys.modules.get("tapegrad._sparse_embedding")
    if sparse_lookups is not None:
        result = sparse_lookups.grad_through_lookups(outputs, inputs, grad_outputs, retain_graph,
                                                     create_graph, allow_unused,
                                                     materialize_grads)
        if result is not None:
            return result
    # MaskedTensors are differentiated through their data (tapegrad/_maskedtensor.py, loaded by
    # the first one made)
    masked = _sys.modules.get("tapegrad._maskedtensor")
    if masked is not None and masked.among(outputs, inputs, grad_outputs):
        return masked.grad_through_data(grad, outputs, inputs, grad_outputs, retain_graph,
                                        create_graph, allow_unused, materialize_grads)
    grads = _core._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                        materialize_grads)
    # bfloat16 inputs' gradients (tapegrad/_bfloat16.py, loaded by the first use of bfloat16)
    bfloat16 = _sys.modules.get("tapegrad._bfloat16")
    if bfloat16 is not None:
        grads = bfloat16.gradients_for(inputs, grads)
    return grads


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """grad with is_grads_batched=True: the first dimension of every grad_output indexes a
    batch of vector-Jacobian products.  PyTorch vmaps its engine over that dimension; here one
    sweep per batch row, the graph kept until the last, and each input's rows stacked.  The
    rows are the same products, so the values equal PyTorch's."""
    from ..tensor import Tensor
    from .. import stack
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    sizes = set()
    for k, (out, go) in enumerate(zip(outs, grad_outputs)):
        if go is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            continue
        if tuple(go.shape[1:]) != tuple(out.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{k}] has a shape of torch.Size({list(go.shape[1:])}) "
                f"and output[{k}] has a shape of torch.Size({list(out.shape)}). If you only want "
                "some tensors in `grad_output` to be considered batched, consider using vmap.")
        sizes.add(go.shape[0])
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
    batch = sizes.pop() if sizes else 1
    keep = create_graph if retain_graph is None else retain_graph
    rows = []
    for i in range(batch):
        row_outputs = [None if go is None else go[i] for go in grad_outputs]
        rows.append(_core._grad(outputs, inputs, row_outputs, True if i < batch - 1 else keep,
                                create_graph, allow_unused, False))
    inputs_seq = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    result = []
    for j, inp in enumerate(inputs_seq):
        column = [row[j] for row in rows]
        if any(g is None for g in column):
            # PyTorch's materialize_grads fills an unused input with unbatched zeros
            result.append(inp.new_zeros(inp.shape) if materialize_grads else None)
        else:
            result.append(stack(column, 0))
    return tuple(result)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate the gradients of `tensors` into the .grad of the leaves they depend on (only
    into `inputs`' .grad when given).  grad_tensors: one per tensor (None for scalars)."""
    if grad_variables is not None:
        import warnings
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
    masked = _sys.modules.get("tapegrad._maskedtensor")
    if masked is not None and masked.among(tensors, inputs, grad_tensors):
        outputs, gradients = masked.as_list(tensors), grad_tensors
        tensors, grad_tensors, inputs = masked.backward_arguments(tensors, grad_tensors, inputs)
        _core._backward(tensors, grad_tensors, retain_graph, create_graph, inputs)
        masked.record_grad_masks(outputs, [None] * len(outputs) if gradients is None
                                 else masked.as_list(gradients))
        return
    _core._backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def __getattr__(name):
    return _lazy.load(globals(), _LAZY, name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
