"""tapegrad.nn.functional: the functions PyTorch has under torch.nn.functional.

They are compiled ops (forward, VJP and registration live in src/tapegrad/ops_*.pxi); this module
exposes what those op families registered for this namespace.
"""
from .. import _core

globals().update(_core.NN_FUNCTIONS)

# Attention (issue 17, part 3): composed from the compiled ops above.
from ._attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402
