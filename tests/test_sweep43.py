"""sweep43: torch.utils.flop_counter.FlopCounterMode (counts, keys, modules, backward, table)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(build):
    """build(lib) under each library's FlopCounterMode(display=False): the counts as
    {module: {op name: flops}}."""
    out = []
    for lib in (tapegrad, torch):
        from importlib import import_module
        mode = import_module(lib.__name__ + ".utils.flop_counter").FlopCounterMode
        lib.manual_seed(0)
        with mode(display=False) as counter:
            build(lib)
        out.append({m: {str(k): v for k, v in d.items()}
                    for m, d in counter.get_flop_counts().items()})
    return out


CASES = {
    "mm": lambda t: t.randn(2, 3) @ t.randn(3, 4),
    "mv": lambda t: t.randn(2, 3) @ t.randn(3),
    "vm": lambda t: t.randn(3) @ t.randn(3, 4),
    "3d@2d": lambda t: t.matmul(t.randn(2, 5, 3), t.randn(3, 4)),
    "2d@3d": lambda t: t.randn(5, 3) @ t.randn(2, 3, 4),
    "4d@bcast": lambda t: t.randn(2, 3, 5, 3) @ t.randn(1, 3, 3, 4),
    "bmm": lambda t: t.bmm(t.randn(2, 3, 4), t.randn(2, 4, 5)),
    "addmm": lambda t: t.addmm(t.randn(3, 5), t.randn(3, 4), t.randn(4, 5)),
    "baddbmm": lambda t: t.baddbmm(t.randn(2, 3, 5), t.randn(2, 3, 4), t.randn(2, 4, 5)),
    "linear3d": lambda t: t.nn.functional.linear(t.randn(2, 3, 4), t.randn(5, 4), t.randn(5)),
    "linear_nobias": lambda t: t.nn.functional.linear(t.randn(2, 3, 4), t.randn(5, 4)),
    "conv1d_kw": lambda t: t.nn.functional.conv1d(t.randn(2, 3, 10), t.randn(4, 3, 3), stride=2),
    "conv3d": lambda t: t.nn.functional.conv3d(t.randn(1, 2, 5, 5, 5), t.randn(3, 2, 3, 3, 3),
                                               padding=1),
    "conv_t": lambda t: t.nn.functional.conv_transpose2d(t.randn(1, 4, 5, 5),
                                                         t.randn(4, 2, 3, 3), stride=2),
    "grouped": lambda t: t.nn.functional.conv2d(t.randn(1, 4, 6, 6), t.randn(6, 2, 3, 3),
                                                groups=2),
    "sdpa": lambda t: t.nn.functional.scaled_dot_product_attention(
        t.randn(2, 4, 6, 8), t.randn(2, 4, 7, 8), t.randn(2, 4, 7, 5)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_flop_counter_forward(case):
    ours, theirs = _both(CASES[case])
    assert ours == theirs


def _backward(kind):
    def build(t):
        F = t.nn.functional
        if kind == "mm_both":
            a, b = t.randn(3, 4, requires_grad=True), t.randn(4, 5, requires_grad=True)
            (a @ b).sum().backward()
        elif kind == "addmm_one":
            a = t.randn(3, 4, requires_grad=True)
            t.addmm(t.randn(3, 5), a, t.randn(4, 5)).sum().backward()
        elif kind == "3d@2d":
            a, b = t.randn(2, 3, 4, requires_grad=True), t.randn(4, 5, requires_grad=True)
            (a @ b).sum().backward()
        elif kind == "baddbmm":
            a, b = t.randn(2, 3, 4, requires_grad=True), t.randn(2, 4, 5, requires_grad=True)
            t.baddbmm(t.randn(2, 3, 5), a, b).sum().backward()
        elif kind == "conv_w":
            w = t.randn(4, 3, 3, requires_grad=True)
            F.conv1d(t.randn(2, 3, 10), w, stride=2).sum().backward()
        elif kind == "conv_both":
            w = t.randn(4, 3, 3, requires_grad=True)
            F.conv1d(t.randn(2, 3, 10, requires_grad=True), w, stride=2).sum().backward()
        elif kind == "sdpa_q":
            q = t.randn(2, 4, 6, 8, requires_grad=True)
            F.scaled_dot_product_attention(q, t.randn(2, 4, 7, 8),
                                           t.randn(2, 4, 7, 5)).sum().backward()
        elif kind == "no_grad":
            a = t.randn(3, 4, requires_grad=True)
            with t.no_grad():
                a @ t.randn(4, 5)
    return build


@pytest.mark.parametrize("kind", ["mm_both", "addmm_one", "3d@2d", "baddbmm", "conv_w",
                                  "conv_both", "sdpa_q", "no_grad"])
def test_flop_counter_backward(kind):
    ours, theirs = _both(_backward(kind))
    assert ours == theirs


def _model(t):
    t.manual_seed(0)
    return t.nn.Sequential(t.nn.Linear(8, 16), t.nn.ReLU(),
                           t.nn.Sequential(t.nn.Linear(16, 4), t.nn.Linear(4, 4)))


def test_flop_counter_modules_and_total():
    def build(t):
        m = _model(t)
        (t.randn(3, 4) @ t.randn(4, 5)).sum()       # outside every module: Global shows
        m(t.randn(5, 8)).sum().backward()
    ours, theirs = _both(build)
    assert ours == theirs
    assert set(ours) == {"Global", "Sequential", "Sequential.0", "Sequential.2",
                         "Sequential.2.0", "Sequential.2.1"}


def test_flop_counter_backward_outside_mode_not_counted():
    from tapegrad.utils.flop_counter import FlopCounterMode
    from torch.utils.flop_counter import FlopCounterMode as TorchMode
    totals = []
    for lib, mode in ((tapegrad, FlopCounterMode), (torch, TorchMode)):
        a = lib.randn(3, 4, requires_grad=True)
        with mode(display=False) as counter:
            y = (a @ lib.randn(4, 5)).sum()
        y.backward()
        totals.append(counter.get_total_flops())
    assert totals[0] == totals[1] == 120


def test_flop_counter_table(capsys):
    from tapegrad.utils.flop_counter import FlopCounterMode
    m = _model(tapegrad)
    with FlopCounterMode(depth=2) as counter:
        (tapegrad.randn(3, 4) @ tapegrad.randn(4, 5)).sum()
        m(tapegrad.randn(1000, 8))
    # as PyTorch prints it (with the tabulate package, which PyTorch imports for it)
    assert capsys.readouterr().out == (
        "Module            FLOP    % Total\n"
        "------------  --------  ---------\n"
        "Global        416.120K    100.00%\n"
        "- aten.mm       0.120K      0.03%\n"
        "- aten.addmm  416.000K     99.97%\n"
        "Sequential    416.000K     99.97%\n"
        "- aten.addmm  416.000K     99.97%\n"
        "Sequential.0  256.000K     61.52%\n"
        "- aten.addmm  256.000K     61.52%\n"
        "Sequential.2  160.000K     38.45%\n"
        "- aten.addmm  160.000K     38.45%\n")
    assert counter.get_table(1).splitlines()[-1] == "- aten.addmm  416.000K     99.97%"
    with FlopCounterMode(display=False) as empty:
        pass
    assert empty.get_table() == ("Module      FLOP    % Total\n"
                                 "--------  ------  ---------\n"
                                 "Global         0         0%")
    key = next(iter(counter.get_flop_counts()["Global"]))
    assert str(key) == "aten.mm" and repr(key) == "<OpOverloadPacket(op='aten.mm')>"


def _flops_column(lib, rows, cols):
    with lib.profiler.profile(with_flops=True) as prof:
        lib.mm(lib.randn(rows, 30), lib.randn(30, cols))
        lib.relu(lib.randn(3))
    lines = prof.key_averages().table().splitlines()
    header = [cell.strip() for cell in lines[1].split("  ") if cell.strip()]
    mm = next(line for line in lines if line.strip().startswith("aten::mm"))
    relu = next(line for line in lines if line.strip().startswith("aten::relu"))
    return header[-1], mm.rstrip()[-12:], relu.rstrip()[-12:]


@pytest.mark.parametrize("rows, cols", [(20, 40), (200, 400), (1, 1)])
def test_profiler_table_total_flops_column(rows, cols):
    ours, theirs = _flops_column(tapegrad, rows, cols), _flops_column(torch, rows, cols)
    assert ours == theirs


def test_profiler_table_no_flops_column_without_counts():
    with tapegrad.profiler.profile(with_flops=True) as prof:
        tapegrad.relu(tapegrad.randn(3))
    assert "FLOPs" not in prof.key_averages().table()
    with tapegrad.profiler.profile() as prof:
        tapegrad.mm(tapegrad.randn(2, 3), tapegrad.randn(3, 2))
    assert "FLOPs" not in prof.key_averages().table()


def test_flop_counter_table_small_counts_print_as_numbers():
    from tapegrad.utils.flop_counter import FlopCounterMode
    m = _model(tapegrad)
    with FlopCounterMode(display=False) as counter:
        m(tapegrad.randn(5, 8)).sum().backward()
    # as PyTorch prints it: totals under 1000s print without a unit, as numbers
    assert counter.get_table(1) == ("Module          FLOP    % Total\n"
                                    "------------  ------  ---------\n"
                                    "Sequential      4960    100.00%\n"
                                    "- aten.addmm    2080     41.94%\n"
                                    "- aten.mm       2880     58.06%")


@pytest.mark.parametrize("equation, shapes, grad", [
    ("ij,jk->ik", [(3, 4), (4, 5)], False),
    ("i,j->ij", [(3,), (4,)], False),               # an outer product: a mul, not counted
    ("i,i->", [(3,), (3,)], False),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)], False),
    ("ijk,jl->il", [(2, 3, 4), (3, 5)], False),     # k summed out first
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)], False),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], False),
    ("ij,jk", [(3, 4), (4, 5)], False),
    ("ij,jk->ik", [(3, 4), (4, 5)], True),
])
def test_flop_counter_einsum(equation, shapes, grad):
    def build(t):
        operands = [t.randn(*s, requires_grad=grad and k == 0) for k, s in enumerate(shapes)]
        out = t.einsum(equation, *operands)
        if grad:
            out.sum().backward()
    ours, theirs = _both(build)
    assert ours == theirs


def test_flop_counter_with_profiler_active():
    # both listen to the same op events: neither disturbs the other
    from tapegrad.utils.flop_counter import FlopCounterMode
    a, b = tapegrad.randn(3, 4, requires_grad=True), tapegrad.randn(4, 5)
    with tapegrad.profiler.profile(with_flops=True) as prof:
        with FlopCounterMode(display=False) as counter:
            (a @ b).sum().backward()
    assert counter.get_total_flops() == 240
    assert sum(e.flops for e in prof.key_averages()) == 120
    assert a.grad is not None


# -- torch._C names scripts call --------------------------------------------------------------

def test_c_names_scripts_call():
    for lib in (tapegrad, torch):
        assert lib._C._get_tracing_state() is None
        assert lib._C.Generator is lib.Generator
        assert lib._C._LinAlgError is lib.linalg.LinAlgError
        assert lib._C._log_api_usage_once("sweep43.test") is None
        try:
            assert lib._C._set_grad_enabled(False) is None
            assert not lib.is_grad_enabled() and not lib._C.is_grad_enabled()
            x = lib.ones(2, requires_grad=True)
            assert not (x * 2).requires_grad
        finally:
            lib._C._set_grad_enabled(True)
        assert (lib.ones(2, requires_grad=True) * 2).requires_grad


@pytest.mark.parametrize("value", [1, None, "yes"])
def test_c_set_grad_enabled_refuses_non_bool(value):
    for lib in (tapegrad, torch):
        with pytest.raises(TypeError, match=r"set_grad_enabled\(\): argument 'enabled' "
                                            r"\(position 1\) must be bool"):
            lib._C._set_grad_enabled(value)
    assert tapegrad.is_grad_enabled()


def test_c_log_api_usage_once_refuses_non_str():
    for lib in (tapegrad, torch):
        with pytest.raises(TypeError, match="bad argument type"):
            lib._C._log_api_usage_once(3)
