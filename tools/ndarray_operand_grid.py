"""Tensor (op) numpy-operand parity with PyTorch: prints each cell (op, form, tensor dtype,
operand, requires_grad) where tapegrad and PyTorch differ, then the count.  The cells are
tests/test_ndarray_operands.py's (which asserts none differ).
With --functions, the public functions instead: each call PyTorch accepts with tensors (argument
templates of tests/test_ndarray_arguments.py's sweep) where an ndarray in a tensor's place is
refused by PyTorch with a TypeError and not by tapegrad.
Usage: python tools/ndarray_operand_grid.py [op ...]
       python tools/ndarray_operand_grid.py --functions [name ...]"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

if sys.argv[1:2] == ["--functions"]:
    import test_ndarray_arguments as functions  # noqa: E402
    bad = 0
    for cell in functions.sweep(sys.argv[2:]):
        bad += 1
        print(cell, flush=True)
    print(bad, "calls differ")
    sys.exit(0)

import test_ndarray_operands as grid  # noqa: E402

n = bad = 0
for op in sys.argv[1:] or grid.OPS:
    n += sum(1 for _ in grid.cells(op))
    for cell in grid.differing_cells(op):
        bad += 1
        print(cell)
print(n, "cells", bad, "differ")
