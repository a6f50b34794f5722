"""tapegrad.sparse: the torch.sparse functions for sparse COO tensors (see
tapegrad._sparse_coo for how they are built on the recorded dense ops)."""
from __future__ import annotations

from ._sparse_coo import sparse_mm, sparse_sum
from ._sparse_legacy import (BFloat16Tensor, ByteTensor, CharTensor, DoubleTensor,  # noqa: F401
                             FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor)

__all__ = ["mm", "sum"]


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
    return sparse_mm(mat1, mat2)


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
    return sparse_sum(input, dim, dtype)
