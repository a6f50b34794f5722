"""What held-out tutorial scripts (proxyh's units) showed tapegrad doing otherwise than PyTorch,
checked against torch where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _function_events(module):
    """The events of a few ops tapegrad implements with internal autograd.Functions (conv,
    pooling, linalg.inv, lgamma, prelu, logcumsumexp, fft), a user's Function, a module's full
    backward hook and a reentrant checkpoint, under module's profiler: the names not aten's."""
    F = module.nn.functional

    class Square(module.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad

    lin = module.nn.Linear(3, 3)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    image = module.tensor(np.linspace(-1, 1, 2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6),
                          requires_grad=True)
    kernel = module.tensor(np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3))
    x = module.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    with module.profiler.profile() as prof:
        F.max_pool2d(F.relu(F.conv2d(image, kernel, padding=1)), 2)
        F.avg_pool2d(image, 2)
        y = module.utils.checkpoint.checkpoint(module.sin, lin(x), use_reentrant=True)
        Square.apply(y)
        module.logcumsumexp(y, 0)
        module.linalg.inv(module.eye(3) + y[:1].T @ y[:1])
        F.prelu(y, module.tensor([0.1]))
        module.lgamma(y.abs() + 1)
        module.i0(y)
        module.fft.fft(y)
    return [e.name for e in prof.events() if "::" not in e.name and e.name != "detach_"]


def test_library_functions_make_no_events_of_their_own(torch):
    # An op tapegrad implements as an internal Function (F.conv2d's _Conv, linalg.inv's _Inverse)
    # is native in PyTorch: its only event is the public call's (aten::conv2d); the Python
    # Functions (the user's, PyTorch's own hook and checkpoint Functions) are events by name.
    mine = _function_events(tg)
    assert mine == _function_events(torch)
    assert mine == ["BackwardHookFunction", "BackwardHookFunction", "CheckpointFunction",
                    "Square"]


def test_library_functions_no_event_without_torch():
    names = _function_events(tg)
    assert "_Conv" not in names and "_MaxPool2d" not in names and "Square" in names


def _memory_profile(module, profile_memory):
    x = module.tensor(np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64))
    # (a first product of a shape settles tapegrad's matmul layout plan, an entry in a cache
    # whose growth, which depends on the tests run before, tracemalloc would count)
    module.mm(x, x)
    with module.profiler.profile(profile_memory=profile_memory, record_shapes=True) as prof:
        with module.profiler.record_function("block"):
            for _ in range(3):
                y = module.mm(x, x)
            z = y.view(-1)
    return prof, z


def _header(table):
    return [cell.strip() for cell in table.splitlines()[1].split("  ") if cell.strip()]


def test_profile_memory_columns_and_sizes_match_torch(torch):
    # A tutorial's profile(profile_memory=True) table lacked the "CPU Mem" and "Self CPU Mem"
    # columns; the sizes are tracemalloc's (a few hundred bytes of Python objects above torch's).
    import tracemalloc
    mine, _ = _memory_profile(tg, True)
    theirs, _ = _memory_profile(torch, True)
    assert not tracemalloc.is_tracing()
    for kwargs in ({}, {"sort_by": "self_cpu_memory_usage"}):
        assert _header(mine.key_averages().table(**kwargs)) == \
            _header(theirs.key_averages().table(**kwargs))
    grouped = (mine.key_averages(group_by_input_shape=True).table(),
               theirs.key_averages(group_by_input_shape=True).table())
    assert _header(grouped[0]) == _header(grouped[1])
    a = {e.key: e for e in mine.key_averages()}
    b = {e.key: e for e in theirs.key_averages()}
    assert b["aten::mm"].cpu_memory_usage == 3 * 64 * 64 * 4
    assert abs(a["aten::mm"].cpu_memory_usage - b["aten::mm"].cpu_memory_usage) < 2048
    assert abs(a["aten::mm"].self_cpu_memory_usage - b["aten::mm"].self_cpu_memory_usage) < 2048
    assert 0 <= a["aten::view"].cpu_memory_usage < 1024 and b["aten::view"].cpu_memory_usage == 0
    block = next(e for e in mine.events() if e.name == "block")
    assert block.self_cpu_memory_usage == block.cpu_memory_usage - sum(
        c.cpu_memory_usage for c in block.cpu_children)


def test_profile_without_memory_has_no_memory_columns(torch):
    mine, _ = _memory_profile(tg, False)
    theirs, _ = _memory_profile(torch, False)
    assert _header(mine.key_averages().table()) == _header(theirs.key_averages().table())
    assert "CPU Mem" not in mine.key_averages().table()
    assert all(e.cpu_memory_usage == 0 for e in mine.events())


def test_profile_memory_keeps_a_trace_it_did_not_start():
    import tracemalloc
    tracemalloc.start()
    try:
        prof, _ = _memory_profile(tg, True)
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()
    assert "Self CPU Mem" in prof.key_averages().table()


@pytest.mark.parametrize("name", ["entr", "ndtr", "ndtri"])
@pytest.mark.parametrize("bad", [None, 1, [0.5], np.array([0.5])], ids=["None", "int", "list", "ndarray"])
def test_special_composed_functions_refuse_non_tensors_as_torch(torch, name, bad):
    # special.entr(1) said "save_for_backward can only save variables", special.ndtr(1) named
    # erfc and a float: PyTorch's parser names the special_ op and the argument's own type
    with pytest.raises(TypeError) as theirs:
        getattr(torch.special, name)(bad)
    with pytest.raises(TypeError) as mine:
        getattr(tg.special, name)(bad)
    assert str(mine.value) == str(theirs.value)


def test_special_composed_functions_values(torch):
    x = np.array([0.25, 0.5, 0.0, -1.0, 2.0], dtype=np.float32)
    for name in ("entr", "ndtr"):
        np.testing.assert_allclose(getattr(tg.special, name)(tg.tensor(x)).numpy(),
                                   getattr(torch.special, name)(torch.tensor(x)).numpy(),
                                   rtol=1e-6, atol=1e-7)
    p = np.array([0.1, 0.5, 0.9], dtype=np.float64)
    np.testing.assert_allclose(tg.special.ndtri(tg.tensor(p)).numpy(),
                               torch.special.ndtri(torch.tensor(p)).numpy(), rtol=1e-12)


_LINALG_BAD_CALLS = [
    ("cholesky", (1,)), ("cholesky_ex", (1,)), ("eigh", (1,)), ("eigvalsh", (1,)), ("eig", (1,)),
    ("eigvals", (1,)), ("vector_norm", (1,)), ("matrix_norm", (1,)), ("norm", (1,)),
    ("cond", (1,)), ("matrix_power", (1, 2)), ("lstsq", (1, "eye")),
    ("householder_product", (1, "eye")), ("householder_product", ("eye", 1)),
    ("lu", (1,)), ("lu_factor", (1,)), ("lu_factor_ex", (1,)), ("vander", (1,)),
    ("tensorinv", (1,)), ("diagonal", (1,)), ("multi_dot", (1,)), ("multi_dot", ([1, "eye"],)),
    ("tensorsolve", (1, "eye")), ("tensorsolve", ("eye", 1)), ("inv", (None,)), ("svd", ([1.0],))]


@pytest.mark.parametrize("name,args", _LINALG_BAD_CALLS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(_LINALG_BAD_CALLS)])
def test_linalg_refuses_non_tensors_as_torch(torch, name, args):
    # linalg.vander / tensorinv / tensorsolve / diagonal raised AttributeError on a non-tensor
    # (PyTorch: TypeError); lu named itself torch_linalg_lu, cond linalg.cond, and cholesky,
    # eig*, the norms ... called their argument 'A' where PyTorch's parser says 'input'
    def run(module):
        eye = module.eye(2)
        call = [eye if a == "eye" else [eye if e == "eye" else e for e in a] if isinstance(a, list)
                else a for a in args]
        with pytest.raises(Exception) as info:
            getattr(module.linalg, name)(*call)
        return type(info.value), str(info.value)
    assert run(tg) == run(torch)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_fft_shifts_refuse_non_tensors_as_torch(torch, name):
    # both said "fftshift(): ..."; PyTorch names fft_fftshift and fft_ifftshift
    with pytest.raises(TypeError) as theirs:
        getattr(torch.fft, name)([1.0, 2.0])
    with pytest.raises(TypeError) as mine:
        getattr(tg.fft, name)([1.0, 2.0])
    assert str(mine.value) == str(theirs.value)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(getattr(tg.fft, name)(tg.tensor(x), dim=1).numpy(),
                                  getattr(torch.fft, name)(torch.tensor(x), dim=1).numpy())
