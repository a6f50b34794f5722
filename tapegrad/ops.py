"""`import tapegrad.ops` (`import torch.ops`): torch.ops is a module object made in tapegrad/_ops.py,
which this import hands back in place of this file's module."""
import sys

from ._ops import ops

sys.modules[__name__] = ops
