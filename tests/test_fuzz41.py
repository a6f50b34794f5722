"""Regressions of the fuzz41 run: differential fuzzing against PyTorch (tools/fuzz.py, seeds
named per test) and hand-written random programs against tapegrad.compile's replay guards.

A compiled call must return what the eager call returns; the eager values are checked against
torch where it is installed.
"""
import numpy as np
import pytest

import tapegrad as tg


def _values(t):
    return t.detach().numpy().tolist()


# -- tapegrad.compile: the helpers a compiled function calls by name --------------------------------
# The environment guard followed the numbers and tensors the compiled function itself read from
# its closure and globals, but not the Python functions it called: rebinding a helper, or changing
# a number only the helper reads, replayed the old capture (a SILENT stale result).

SCALE = 2.0


def _scaled(x):
    return x * SCALE


def _calls_scaled(x):
    return _scaled(x) + 1


def test_compile_recaptures_when_a_helpers_global_number_changes():
    global SCALE
    torch = pytest.importorskip("torch")
    compiled = tg.compile(_calls_scaled)
    x = [1.0, 2.0]
    try:
        for scale in (2.0, 2.0, 3.0, 3.0, -0.0):
            SCALE = scale
            expected = (torch.tensor(x) * scale + 1).tolist()
            assert _values(compiled(tg.tensor(x))) == expected, scale
    finally:
        SCALE = 2.0


def _adder(c):
    def add(x):
        return x + c
    return add


def test_compile_recaptures_when_a_called_function_is_rebound():
    torch = pytest.importorskip("torch")
    namespace = {"helper": _adder(1.0)}
    exec("def f(x):\n    return helper(x) * 2\n", namespace)
    compiled = tg.compile(namespace["f"])
    x = [2.0, -3.0]
    for step, c in enumerate((1.0, 1.0, 5.0, 5.0)):
        namespace["helper"] = _adder(c)
        expected = ((torch.tensor(x) + c) * 2).tolist()
        assert _values(compiled(tg.tensor(x))) == expected, step


def test_compile_recaptures_when_a_helpers_closure_cell_changes():
    def make():
        n = 1.0

        def times(x):
            return x * n

        def bump():
            nonlocal n
            n += 1
        return times, bump
    times, bump = make()
    compiled = tg.compile(lambda x: times(x))
    x = tg.tensor([1.0, 2.0])
    for n in (1.0, 2.0, 3.0):
        assert _values(compiled(x)) == [n, 2 * n]
        bump()


# -- diagonal of a tensor laid out densely in a permuted order --------------------------------------

def _permuted_dense(lib):
    # abs keeps the transposed layout (strides (12, 1, 3)) in a memory block of its own
    return lib.arange(24., dtype=lib.float64).reshape(2, 4, 3).transpose(1, 2).abs()


@pytest.mark.parametrize("make_view", [
    lambda t: t.diagonal(),
    lambda t: t.diagonal(1, 1, 2),
    lambda t: t.as_strided((2, 2), (1, 3), 1),
], ids=["diagonal", "diagonal-offset", "as_strided"])
def test_view_of_permuted_dense_tensor_writes_through(make_view):
    """SILENT (fuzz seed 66300108): storage_of took only C- or Fortran-ordered owners as
    storages, so diagonal() of such a tensor was an index_select copy posing as a view (writes
    through it were lost) and as_strided raised."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        t = _permuted_dense(lib)
        view = make_view(t)
        view.mul_(-1)
        results.append((_values(t), tuple(view.stride())))
    assert results[0] == results[1]


def test_diagonal_copy_into_permuted_dense_tensor_records_the_write():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        t = _permuted_dense(lib)
        source = lib.linspace(-1, 1, 8, dtype=lib.float64).reshape(4, 2).requires_grad_()
        t.diagonal().copy_(source.tanh())
        t.sum().backward()
        results.append((_values(t), t.requires_grad, _values(source.grad)))
    np.testing.assert_allclose(results[0][0], results[1][0])
    assert results[0][1] is results[1][1] is True
    np.testing.assert_allclose(results[0][2], results[1][2])


# -- bfloat16 losses and log_softmax ------------------------------------------------------------------

def _bf16_outcome(lib, fn, *arrays):
    tensors = [lib.tensor(a).to(lib.bfloat16) if bf else lib.tensor(a) for a, bf in arrays]
    result = fn(lib, *tensors)
    return str(result.dtype).replace("tapegrad.", "torch."), result.float().tolist()


_X = np.array([0.3, -1.0, 2.0, -0.25], dtype=np.float32)
_T = np.array([0.2, 1.0, 0.0, 0.7], dtype=np.float32)
_P = np.array([1.5, 0.5, 2.0, 0.75], dtype=np.float32)


@pytest.mark.parametrize("x_bf, t_bf, p_bf, reduction", [
    (False, True, True, "sum"), (False, True, False, "none"), (False, True, None, "mean"),
    (True, False, None, "none"), (True, True, False, "none"), (True, True, True, "sum"),
])
def test_bce_with_logits_bfloat16_has_the_targets_dtype(x_bf, t_bf, p_bf, reduction):
    """fuzz seed 66300093: ATen builds the loss in place on (1 - target), so it has the
    target's dtype and each step rounds in bfloat16; tapegrad's was float32 for a float32 input
    with a bfloat16 target, and rounded once."""
    torch = pytest.importorskip("torch")

    def loss(lib, x, t, *p):
        return lib.nn.functional.binary_cross_entropy_with_logits(
            x, t, reduction=reduction, pos_weight=p[0] if p else None)
    arrays = [(_X, x_bf), (_T, t_bf)] + ([(_P, p_bf)] if p_bf is not None else [])
    assert _bf16_outcome(tg, loss, *arrays) == _bf16_outcome(torch, loss, *arrays)


@pytest.mark.parametrize("shape, dim", [((3, 2, 4), -2), ((5, 40, 7), 0), ((5, 40, 7), 1),
                                        ((5, 40, 7), 2), ((6, 50), 1), ((3, 1, 50), -1)])
def test_log_softmax_bfloat16_rounds_as_pytorchs_kernel(shape, dim):
    """fuzz seed 66300099: along the last dimension PyTorch holds the sum of exponentials and
    its log in bfloat16; along another it computes in float32 throughout (values 3 ulp off)."""
    torch = pytest.importorskip("torch")
    values = (np.random.default_rng(7).standard_normal(shape) * 3).astype(np.float32)
    weights = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(values).to(lib.bfloat16).requires_grad_()
        y = lib.log_softmax(x, dim)
        (y * lib.tensor(weights).to(lib.bfloat16)).sum().backward()
        results.append((y.float().tolist(), x.grad.float().tolist()))
    assert results[0] == results[1]


# -- sparse: to_dense's gradient to a dense origin ------------------------------------------------------

@pytest.mark.parametrize("masked_grad", [None, False])
@pytest.mark.parametrize("build", [
    lambda lib, d, e: d.to_sparse() - e,
    lambda lib, d, e: lib.add(e, d.to_sparse(), alpha=2),
    lambda lib, d, e: (d.to_sparse() * 2).coalesce(),
    lambda lib, d, e: d.to_sparse_csr() * 2,
], ids=["sub", "add-alpha", "scaled", "csr"])
def test_to_dense_gradient_reaches_a_dense_origin_as_pytorchs(build, masked_grad):
    """SILENT (fuzz formats seed 4030): d.to_sparse() - e gave d no gradient where only e
    stores an entry (PyTorch masks to_dense's gradient by the result's pattern, then hands it
    back unmasked), and to_dense(masked_grad=False) was masked anyway."""
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (tg, torch):
        d = lib.tensor([[0.5, 0.0], [0.0, 1.0], [-2.0, 2.0]], dtype=lib.float64,
                       requires_grad=True)
        e = lib.tensor([[0.0, 0.0], [3.0, -1.5], [0.0, 0.0]], dtype=lib.float64).to_sparse()
        x = build(lib, d, e)
        out = x.to_dense() if masked_grad is None else x.to_dense(masked_grad=masked_grad)
        weights = lib.linspace(-1, 2, 6, dtype=lib.float64).reshape(3, 2)
        (out * weights).sum().backward()
        grads.append(_values(d.grad))
    np.testing.assert_allclose(grads[0], grads[1])


@pytest.mark.parametrize("layouts", [("csr", "csc"), ("csc", "csr")])
@pytest.mark.parametrize("other_empty", [True, False])
def test_csr_plus_csc_as_pytorch(layouts, other_empty):
    """fuzz formats seed 4648: PyTorch adds an empty CSC tensor to a CSR one (tapegrad
    refused it) and refuses the other mixes with RuntimeError."""
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (tg, torch):
        a = lib.ones(2, 3, dtype=lib.float64)
        b = lib.zeros(2, 3, dtype=lib.float64) if other_empty else a
        s = getattr(a, "to_sparse_" + layouts[0])()
        t = getattr(b, "to_sparse_" + layouts[1])()
        try:
            r = s.add(t)
            outcomes.append(("ok", str(r.layout).split(".")[-1], _values(r.to_dense())))
        except RuntimeError as e:
            outcomes.append(("RuntimeError", str(e)))
    assert outcomes[0] == outcomes[1]
