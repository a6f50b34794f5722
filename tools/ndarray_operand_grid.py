"""Tensor (op) numpy-operand parity with PyTorch: prints each cell (op, form, tensor dtype,
operand, requires_grad) where tapegrad and PyTorch differ, then the count.  The cells are
tests/test_ndarray_operands.py's (which asserts none differ).
Usage: python tools/ndarray_operand_grid.py [op ...]"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import test_ndarray_operands as grid  # noqa: E402

n = bad = 0
for op in sys.argv[1:] or grid.OPS:
    n += sum(1 for _ in grid.cells(op))
    for cell in grid.differing_cells(op):
        bad += 1
        print(cell)
print(n, "cells", bad, "differ")
