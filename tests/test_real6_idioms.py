"""Idioms from the real6 held-out proxy (issue 15): public scripts (hunkim/PyTorchZeroToAll,
pytorch/examples, ShusenTang/Dive-into-DL-PyTorch) run with `import tapegrad as torch` print what
they print under PyTorch."""
from __future__ import annotations

import pytest

import tapegrad as tg


def _loader_iterator_error(lib, num_workers):
    ds = lib.utils.data.TensorDataset(lib.arange(8.0))
    it = iter(lib.utils.data.DataLoader(ds, batch_size=2, num_workers=num_workers))
    with pytest.raises(AttributeError) as info:
        it.next()      # the Python 2 idiom: Dive-into-DL-PyTorch 3.6 stops here under PyTorch
    return type(it).__name__, str(info.value)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_loader_iterator_class_names_match_torch(torch, num_workers):
    # The AttributeError names the iterator's class; PyTorch's worker iterator is private.
    assert _loader_iterator_error(tg, num_workers) == _loader_iterator_error(torch, num_workers)


def test_worker_iterator_reachable_under_torch_module_name(torch):
    assert tg.utils.data.dataloader._MultiProcessingDataLoaderIter.__name__ == \
        torch.utils.data.dataloader._MultiProcessingDataLoaderIter.__name__


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_other_by_keyword(torch, name):
    # Dive-into-DL-PyTorch 3.9 writes relu as torch.max(input=X, other=torch.tensor(0.0)).
    import numpy as np
    data = np.array([[1.5, -2.0, 0.25], [-0.5, 3.0, -1.0]])
    outs = []
    for lib in (torch, tg):
        x = lib.tensor(data, requires_grad=True)
        zero = lib.tensor(0.0, dtype=lib.float64, requires_grad=True)
        y = getattr(lib, name)(input=x, other=zero)
        m = getattr(x, name)(other=zero)
        (y * lib.arange(6.0, dtype=lib.float64).reshape(2, 3)).sum().backward()
        outs.append((y.detach().numpy(), m.detach().numpy(), x.grad.numpy(), zero.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a)


@pytest.mark.parametrize("call", ["{f}(x, 0, other=y)", "{f}(x, other=y, keepdim=True)",
                                  "{f}(x, dim=0, other=y)", "{f}(x, other=0.5)"])
def test_max_other_keyword_bad_combinations_raise_type_error(torch, call):
    for lib in (torch, tg):
        x, y = lib.ones(3), lib.zeros(3)
        with pytest.raises(TypeError, match="max"):
            eval(call.format(f="lib.max"), {"lib": lib, "x": x, "y": y})


def _without_address(text: str) -> str:
    import re
    return re.sub(r"0x[0-9a-f]+", "0x?", text)


def test_grad_mode_objects_print_as_torch(torch):
    # chenyuntc/pytorch-book chapter 3 ends a notebook cell with `t.set_grad_enabled(True)`.
    outs = []
    for lib in (torch, tg):
        outs.append([_without_address(repr(o)) for o in (
            lib.set_grad_enabled(False), lib.set_grad_enabled(True), lib.no_grad(),
            lib.enable_grad(), lib.inference_mode(), lib.inference_mode(False))])
        assert lib.is_grad_enabled()
    assert outs[0] == outs[1]


def test_autograd_grad_mode_module(torch):
    from tapegrad.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
    assert (no_grad, enable_grad, set_grad_enabled, inference_mode) == \
        (tg.no_grad, tg.enable_grad, tg.set_grad_enabled, tg.inference_mode)
    assert tg.autograd.grad_mode.no_grad is tg.no_grad

    class Mine(tg.no_grad):        # a user's subclass keeps Python's default repr
        pass
    assert repr(Mine()).startswith("<" + __name__ + ".") or "Mine object at" in repr(Mine())
