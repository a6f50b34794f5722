"""matplotlib on tapegrad tensors when the script says `import tapegrad as torch`.

matplotlib turns array-likes into ndarrays in cbook._unpack_to_numpy, which takes a PyTorch
tensor by np.asarray when cbook._is_torch_array says so, and that test looks up the module named
"torch" in sys.modules.  Under the corpus hook that module is tapegrad and our tensors pass; a
script that imports tapegrad by its own name has no "torch" module (or PyTorch's, whose Tensor
ours is not), so plot, stem, hist & co. kept the tensor itself: plt.stem(x, y) called np.min on
it (TypeError: min() received an invalid combination of arguments), and a tensor requiring grad
was read element by element (a "Converting a tensor with requires_grad=True to a scalar" warning)
before PyTorch's "Can't call numpy() on Tensor that requires grad" error.  Here the test also
says yes to our tensors, so they convert as PyTorch's do (np.asarray: __array__).
"""
from __future__ import annotations as _annotations

from ._on_import import when_imported

_CBOOK = "matplotlib.cbook"


def _recognise_tensors(cbook) -> None:
    is_torch_array = getattr(cbook, "_is_torch_array", None)
    if is_torch_array is None or getattr(is_torch_array, "takes_tapegrad_tensors", False):
        return      # (another matplotlib, or done)
    from ._core import TensorBase

    def _is_torch_array(x):
        return isinstance(x, TensorBase) or is_torch_array(x)

    _is_torch_array.__doc__ = is_torch_array.__doc__
    _is_torch_array.takes_tapegrad_tensors = True
    cbook._is_torch_array = _is_torch_array


def install() -> None:
    when_imported(_CBOOK, _recognise_tensors)
