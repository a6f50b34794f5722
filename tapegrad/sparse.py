"""tapegrad.sparse: the torch.sparse functions for sparse COO tensors (see
tapegrad._sparse_coo for how they are built on the recorded dense ops)."""
from __future__ import annotations as _annotations

# torch/sparse/__init__.py does `import torch`, and capsule-network scripts reach the package
# through it (`torch.sparse.torch.eye(n).index_select(0, labels)` builds one-hot rows).
import tapegrad as torch  # noqa: F401
from ._sparse_coo import _invariant_checks
from ._sparse_coo import set_invariant_checks as _set_invariant_checks
from ._sparse_coo import sparse_addmm as _sparse_addmm
from ._sparse_coo import sparse_mm_public as _sparse_mm_public
from ._sparse_coo import sparse_softmax as _sparse_softmax
from ._sparse_coo import sparse_sum as _sparse_sum
from ._sparse_coo import spdiags as _spdiags
from ._sparse_coo import SparseTensor as _SparseTensor
from ._sparse_legacy import (BFloat16Tensor, ByteTensor, CharTensor, DoubleTensor,  # noqa: F401
                             FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor)

__all__ = ["addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "sum"]


class check_sparse_tensor_invariants:  # noqa: N801  (PyTorch's name)
    """``torch.sparse.check_sparse_tensor_invariants``: the global switch for checking sparse
    tensors' invariants in their constructors, as a context manager (``with
    check_sparse_tensor_invariants():``), a decorator (``@check_sparse_tensor_invariants()``)
    or procedurally (``enable()``, ``disable()``, ``is_enabled()``).  tapegrad checks indices
    against the size whatever the switch says; setting it explicitly (either way) silences the
    one-time "implicitly disabled" warning of ``sparse_coo_tensor``, as in PyTorch.

    Examples
    --------
    >>> with tapegrad.sparse.check_sparse_tensor_invariants():
    ...     tapegrad.sparse.check_sparse_tensor_invariants.is_enabled()
    True
    """

    @staticmethod
    def is_enabled() -> bool:
        """Whether the switch is on (off unless enabled)."""
        return _invariant_checks["enabled"]

    @staticmethod
    def enable() -> None:
        """Turn the switch on (an explicit choice: no more "implicitly disabled" warning)."""
        _set_invariant_checks(True)

    @staticmethod
    def disable() -> None:
        """Turn the switch off (an explicit choice: no more "implicitly disabled" warning)."""
        _set_invariant_checks(False)

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        _set_invariant_checks(self.state)

    def __exit__(self, exc_type, exc_value, traceback):
        _set_invariant_checks(self.saved_state)
        self.saved_state = None

    def __call__(self, fn):
        def with_checks(*args, **kwargs):
            with type(self)(self.state):
                return fn(*args, **kwargs)
        return with_checks


def mm(mat1, mat2, reduce=None):
    """``torch.sparse.mm``: the matrix product of a sparse COO matrix and a dense one (dense
    result), a dense and a sparse one (dense), or two sparse ones (sparse).  Differentiable in
    both operands; a leaf sparse operand receives a sparse gradient on its own pattern.

    Examples
    --------
    >>> s = tapegrad.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
    >>> tapegrad.sparse.mm(s, tapegrad.ones(2, 1))
    tensor([[2.],
            [3.]])
    """
    if reduce is not None:
        raise NotImplementedError("Could not run 'aten::_sparse_mm_reduce_impl' with arguments "
                                  "from the 'SparseCPU' backend")
    return _sparse_mm_public(mat1, mat2)


def sum(input, dim=None, dtype=None):  # noqa: A001  (PyTorch's name)
    """``torch.sparse.sum``: the sum of a sparse tensor over all dimensions (a dense 0-d tensor)
    or over ``dim`` (an int or a sequence of ints): a dense tensor when every sparse dimension
    is reduced, else a coalesced sparse tensor.  ``dtype`` converts the values first.

    Examples
    --------
    >>> s = tapegrad.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    >>> tapegrad.sparse.sum(s)
    tensor(12.)
    """
    return _sparse_sum(input, dim, dtype)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` for a sparse COO ``mat1``
    and dense ``mat`` and ``mat2`` (a dense result).

    Examples
    --------
    >>> s = tapegrad.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
    >>> tapegrad.sparse.addmm(tapegrad.ones(2, 1), s, tapegrad.ones(2, 1))
    tensor([[3.],
            [4.]])
    """
    return _sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def softmax(input, dim, *, dtype=None):
    """``torch.sparse.softmax``: the softmax of a sparse COO tensor's stored values along
    ``dim``; unstored entries count as -inf, so they stay unstored (a sparse result on the
    coalesced input's pattern).  ``dtype`` converts the values first.

    Examples
    --------
    >>> s = tapegrad.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1., 1., 5.], (2, 3))
    >>> tapegrad.sparse.softmax(s, 1).to_dense()
    tensor([[0.5000, 0.0000, 0.5000],
            [0.0000, 1.0000, 0.0000]])
    """
    return _sparse_softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """``torch.sparse.log_softmax``: the log of ``softmax`` over the stored values along ``dim``
    (a sparse result on the coalesced input's pattern).

    Examples
    --------
    >>> s = tapegrad.sparse_coo_tensor([[0, 0], [0, 2]], [1., 1.], (1, 3))
    >>> tapegrad.sparse.log_softmax(s, 1).values()
    tensor([-0.6931, -0.6931])
    """
    return _sparse_softmax(input, dim, dtype, log=True)



def spdiags(diagonals, offsets, shape, layout=None):
    """``torch.sparse.spdiags``: a 2-D sparse matrix with the rows of ``diagonals`` along the
    diagonals ``offsets`` (an int64 tensor; 0 main, > 0 above, < 0 below); entry ``(i, j)``
    takes ``diagonals[d, j]``, as scipy.sparse.spdiags.  A COO result unless ``layout`` is
    ``torch.sparse_csr`` or ``torch.sparse_csc``.

    Examples
    --------
    >>> tapegrad.sparse.spdiags(tapegrad.tensor([[1., 2., 3.], [4., 5., 6.]]),
    ...                         tapegrad.tensor([0, 1]), (3, 3)).to_dense()
    tensor([[1., 5., 0.],
            [0., 2., 6.],
            [0., 0., 3.]])
    """
    return _spdiags(diagonals, offsets, shape, layout)



def spsolve(input, other, *, left=True):
    """``torch.sparse.spsolve``: PyTorch solves a sparse CSR system only on CUDA (cuDSS); its
    CPU build refuses every input with NotImplementedError, naming the backend of ``input``
    (dense tensors are 'CPU'), and so does tapegrad.  Use ``torch.linalg.solve`` on
    ``input.to_dense()``, or conjugate gradients with ``torch.sparse.mm``, on the CPU."""
    from ._core import type_name
    from ._quantized import _not_implemented
    from .tensor import Tensor
    if not isinstance(input, (Tensor, _SparseTensor)):
        raise TypeError(f"_spsolve(): argument 'A' (position 1) must be Tensor, not "
                        f"{type_name(input)}")
    raise _not_implemented("_spsolve", getattr(input, "_backend", "CPU"))
