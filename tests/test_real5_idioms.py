"""Idioms from the real5 held-out proxy (issue 15): public scripts run with `import tapegrad as
torch` print what they print under PyTorch."""
from __future__ import annotations

import re

import tapegrad as tg


def _scale_function(lib):
    class AddAndAverage(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return (x + y) / 2

        @staticmethod
        def backward(ctx, g):
            return g / 2, g / 2

    return AddAndAverage


def _without_address(text: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x?", text)


def test_custom_function_grad_fn_prints_torch_module_path(torch):
    # Atcold/NYU-DLSP20 extra/b-custom_grads prints `z.grad_fn` of a custom Function.
    outs = []
    for lib in (torch, tg):
        fn = _scale_function(lib)
        z = fn.apply(lib.ones(3, requires_grad=True), lib.ones(3, requires_grad=True))
        outs.append((_without_address(repr(z.grad_fn)), _without_address(str(z.grad_fn)),
                     repr(type(z.grad_fn)), z.grad_fn.name()))
    assert outs[0] == outs[1]
    assert outs[1][0] == "<torch.autograd.function.AddAndAverageBackward object at 0x?>"


def test_custom_function_backward_class_keeps_its_real_module_for_pickle():
    # Only the printed name changes (as for Tensor): the class's __module__ stays ours.
    fn = _scale_function(tg)
    z = fn.apply(tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True))
    assert type(z.grad_fn).__module__ == "tapegrad.autograd.function"
    z.sum().backward()
