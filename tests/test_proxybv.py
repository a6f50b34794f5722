"""What the session-35 proxy of public model-compression scripts (pruning, distillation, low-rank
factorisation, parametrizations, module hooks, model surgery) found tapegrad doing differently."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as tnn

torch = pytest.importorskip("torch")


def _output_side_hook_warnings(lib):
    """A full backward hook on a module none of whose inputs requires grad fires from the
    outputs' side, with PyTorch's UserWarning; the records of the warnings a backward raised."""
    lin = lib.nn.Linear(3, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gin, gout: seen.append((gin, len(gout))))
    out = lin(lib.ones(2, 3)).sum()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out.backward()                                   # the line the warning must name
    return seen, [w for w in rec if "Full backward hook is firing" in str(w.message)]


def test_output_side_full_backward_hook_warning_names_the_users_backward_line():
    # PyTorch's warning points at the user's line that called backward(), as a C++ warning
    # would; tapegrad's named its own hook module, so a script printing warnings differed.
    seen_t, rec_t = _output_side_hook_warnings(torch)
    seen_g, rec_g = _output_side_hook_warnings(tg)
    assert len(rec_t) == len(rec_g) == 1
    assert rec_t[0].category is rec_g[0].category is UserWarning
    assert rec_t[0].filename == __file__
    assert rec_g[0].filename == __file__
    assert rec_g[0].lineno == rec_t[0].lineno
    assert [(g, n) for g, n in seen_t] == [((None,), 1)]
    assert [(g, n) for g, n in seen_g] == [((None,), 1)]


def _grouped_conv_flops(lib, transposed, groups, batched):
    """FlopCounterMode's counts of a grouped convolution's forward and backward (input and
    weight both requiring grad), keyed by op name."""
    from importlib import import_module
    mode = import_module(lib.__name__ + ".utils.flop_counter").FlopCounterMode(display=False)
    cls = lib.nn.ConvTranspose2d if transposed else lib.nn.Conv2d
    conv = cls(6, 12, (3, 2), groups=groups, stride=2, padding=1)
    x = lib.ones(*((2,) if batched else ()), 6, 5, 7, requires_grad=True)
    with mode:
        conv(x).sum().backward()
    return {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}, mode.get_total_flops()


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("groups", [2, 3, 6])
@pytest.mark.parametrize("batched", [True, False])
def test_flop_counter_grouped_convolution_backward_counts_as_pytorch(transposed, groups, batched):
    # PyTorch counts the weight's gradient of a grouped convolution as one convolution over all
    # the input channels (groups times the forward); tapegrad counted it as the forward, so a
    # FLOP report of a depthwise / grouped model came out smaller (98496 against 101952).
    want = _grouped_conv_flops(torch, transposed, groups, batched)
    got = _grouped_conv_flops(tg, transposed, groups, batched)
    assert got == want
