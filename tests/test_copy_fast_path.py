"""copy_'s direct path (plain_copy: an unrecorded source of the target's shape into a dense,
writeable target) and the in-place methods that write their result back through it (addcmul_,
addcdiv_, lerp_, clamp_ ...): the same values, casts, refusals and version bumps as the indexing
path they skip, each checked against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg


def outcome(lib, program):
    """program(lib)'s values, or its exception's type and first words."""
    try:
        out = program(lib)
    except Exception as e:      # noqa: BLE001 - the exception is the outcome compared
        return type(e).__name__, str(e).split(".")[0][:60]
    return [np.asarray(t.detach().numpy() if hasattr(t, "detach") else t).tolist() for t in out]


def _cast_float_to_int(lib):
    t = lib.zeros(3, dtype=lib.int64)
    return [t.copy_(lib.tensor([1.7, -2.7, 3.2]))]


def _cast_bool(lib):
    t = lib.zeros(3)
    return [t.copy_(lib.tensor([True, False, True]))]


def _float64_into_float32(lib):
    t = lib.zeros(2, dtype=lib.float32)
    return [t.copy_(lib.tensor([0.1, 1e40], dtype=lib.float64))]


def _partial_overlap(lib):
    a = lib.arange(6.0)
    a[1:].copy_(a[:-1])
    return [a]


def _leaf_requires_grad(lib):
    p = lib.ones(3, requires_grad=True)
    return [p.copy_(lib.zeros(3))]


def _leaf_under_no_grad(lib):
    p = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        p.copy_(lib.tensor([1.0, 2.0, 3.0]))
    return [p]


def _saved_then_overwritten(lib):
    # the write must bump the version: backward then refuses the overwritten saved value
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    z = y.exp()                 # saves its output z
    with lib.no_grad():
        z.copy_(lib.zeros(3))
    z.sum().backward()
    return [x.grad]


def _expanded_target(lib):
    e = lib.zeros(1, 3).expand(2, 3)
    return [e.copy_(lib.ones(2, 3))]


def _into_view(lib):
    base = lib.zeros(2, 3)
    base[1].copy_(lib.tensor([1.0, 2.0, 3.0]))
    base[:, 0].copy_(lib.tensor([7.0, 8.0]))        # (a non-contiguous view: the other path)
    return [base]


def _recorded_source(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    t = lib.zeros(2)
    t.copy_(x * 3)
    t.sum().backward()
    return [t, x.grad]


def _inplace_methods(lib):
    p = lib.tensor([1.0, -2.0, 3.0])
    g = lib.tensor([0.5, 0.25, -1.0])
    p.addcmul_(g, g, value=0.1).addcdiv_(g, p.abs() + 1, value=-0.5).lerp_(g, 0.3)
    p.clamp_(min=-0.2)
    q = lib.tensor([1, 2, 3])
    return [p, q.clamp_(min=2)]


def _inplace_method_leaf(lib):
    p = lib.ones(3, requires_grad=True)
    return [p.addcmul_(p, p)]


def _inplace_method_int_into_bool(lib):
    t = lib.tensor([True, False])
    return [t.lerp_(lib.tensor([1.0, 0.0]), 0.5)]


PROGRAMS = [_cast_float_to_int, _cast_bool, _float64_into_float32, _partial_overlap,
            _leaf_requires_grad, _leaf_under_no_grad, _saved_then_overwritten, _expanded_target,
            _into_view, _recorded_source, _inplace_methods, _inplace_method_leaf,
            _inplace_method_int_into_bool]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__.strip("_"))
def test_matches_torch(torch, program):
    assert outcome(tg, program) == outcome(torch, program)


def test_version_moves():
    t = tg.zeros(3)
    before = t._version
    t.copy_(tg.ones(3))
    assert t._version == before + 1 and t.tolist() == [1.0, 1.0, 1.0]


def test_views_see_the_write():
    base = tg.zeros(4)
    view = base[1:3]
    base.copy_(tg.arange(4.0))
    assert view.tolist() == [1.0, 2.0]


# -- casts that overflow: silent inf/NaN casts as PyTorch's, and its range errors for scalars --------
# (numpy's RuntimeWarning "overflow encountered in cast" leaked from every write below; a scalar
# out of a float16/float32 range gave inf, or NaN through lerp_, where PyTorch raises)

def _big(lib):
    return lib.tensor([0.1, 1e40, -1e300], dtype=lib.float64)


CAST_CASES = {
    "copy_": lambda lib: lib.zeros(3, dtype=lib.float32).copy_(_big(lib)),
    "setitem": lambda lib: lib.zeros(3, dtype=lib.float32).__setitem__(slice(0, 3), _big(lib)),
    "tensor": lambda lib: lib.tensor([1e40], dtype=lib.float32),
    "tensor_default": lambda lib: lib.tensor([1e40]),
    "iadd": lambda lib: lib.zeros(3, dtype=lib.float32).__iadd__(_big(lib)),
    "out": lambda lib: lib.add(_big(lib), 1.0, out=lib.zeros(3, dtype=lib.float32)),
    "nan_to_int": lambda lib: lib.zeros(2, dtype=lib.int32).copy_(lib.tensor([1e30, float("nan")])),
    "fill_": lambda lib: lib.zeros(3, dtype=lib.float32).fill_(1e40),
    "fill_half": lambda lib: lib.zeros(3, dtype=lib.float16).fill_(1e5),
    "fill_inf": lambda lib: lib.zeros(3, dtype=lib.float16).fill_(float("inf")),
    "full": lambda lib: lib.full((2,), 1e40, dtype=lib.float32),
    "full_uint8": lambda lib: lib.full((2,), 300, dtype=lib.uint8),
    "masked_fill": lambda lib: lib.zeros(2).masked_fill(lib.tensor([True, False]), 1e40),
    "masked_fill_nan": lambda lib: lib.zeros(2).masked_fill(lib.tensor([True, False]), float("nan")),
    "lerp_": lambda lib: lib.zeros(3).lerp_(lib.zeros(3), 1e40),
    "clamp_half": lambda lib: lib.zeros(2, dtype=lib.float16).clamp(max=1e5),
}


def cast_outcome(lib, program):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = program(lib)
            values = None if result is None else str(result.tolist())   # (str: NaN == NaN)
        except RuntimeError as e:
            values = ("RuntimeError", str(e))
    return values, [str(w.message) for w in caught]


@pytest.mark.parametrize("case", CAST_CASES)
def test_overflowing_casts_match_torch(torch, case):
    assert cast_outcome(tg, CAST_CASES[case]) == cast_outcome(torch, CAST_CASES[case])
