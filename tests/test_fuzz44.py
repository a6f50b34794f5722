"""Session 44's fuzz findings: products of half types in PyTorch's rounding and order, and
the bfloat16 backward kernels PyTorch lacks.  Each compares against PyTorch itself."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

# fuzz 67000840: a bfloat16 prod(dim=1) of 4 values, 4 bfloat16 ulps off
ROWS = np.array([-0.15230206612145794, -1.9543889330778064, -0.6006706033056275,
                 0.8755535357423613, -0.8796476198367593, -1.5694828335636648,
                 -1.5351938757384151, -1.4407944263026253, 0.5018229252386388,
                 -0.1440993119843055, -1.9430886578901259, -0.11687265520124215],
                dtype=np.float32).reshape(3, 4)


def _pair(values, dtype):
    """The same half-type leaf in both libraries, requiring grad."""
    ours = tg.tensor(values).to(getattr(tg, dtype)).requires_grad_()
    theirs = torch.tensor(values).to(getattr(torch, dtype)).requires_grad_()
    return ours, theirs


def _bits(t):
    return t.detach().float().numpy()


CALLS = [
    ("dim1", lambda x: x.prod(1)),
    ("dim0", lambda x: x.prod(0)),
    ("keepdim", lambda x: x.prod(-1, True)),
    ("keywords", lambda x: x.prod(dim=1, keepdim=True)),
    ("function", lambda x: x.mT.prod(0)),
    ("all", lambda x: x.prod()),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_half_prod_rounds_every_partial_product(dtype, name, call):
    """PyTorch multiplies a half type in that type (each partial product rounded), where a
    float32 accumulator rounded once was an ulp or more away; the gradient is its
    grad * (result / input) in the half type (the quotient rounded first)."""
    ours, theirs = _pair(ROWS, dtype)
    y, yt = call(ours), call(theirs)
    assert y.dtype == getattr(tg, dtype) and yt.dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(_bits(y), _bits(yt))
    w = np.linspace(-1.5, 2.0, yt.numel(), dtype=np.float32).reshape(tuple(yt.shape))
    (y.float() * tg.tensor(w)).sum().backward()
    (yt.float() * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(_bits(ours.grad), _bits(theirs.grad))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_prod_with_zeros_gradient(dtype):
    """With a zero, PyTorch's gradient is the product of the other elements (exclusive
    cumulative products), in the half type."""
    values = ROWS.copy()
    values[1, 2] = 0.0
    ours, theirs = _pair(values, dtype)
    y, yt = ours.prod(1), theirs.prod(1)
    np.testing.assert_array_equal(_bits(y), _bits(yt))
    (y.float() * tg.tensor([0.5, -2.0, 1.25])).sum().backward()
    (yt.float() * torch.tensor([0.5, -2.0, 1.25])).sum().backward()
    np.testing.assert_array_equal(_bits(ours.grad), _bits(theirs.grad))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape,dim", [((3, 150), 1), ((150, 3), 0), ((300,), None),
                                       ((2, 5, 70), 2), ((70, 5), "T")])
def test_half_prod_long_rows_follow_the_vector_loop(dtype, shape, dim, torch_bits):
    """Rows of 64 or more contiguous elements: PyTorch's loop multiplies 16-lane vectors
    before the remaining elements (its vector kernel: torch_bits)."""
    values = np.random.default_rng(44).uniform(0.9, 1.1, shape).astype(np.float32)
    ours, theirs = _pair(values, dtype)
    if dim == "T":
        y, yt = ours.mT.prod(1), theirs.mT.prod(1)
    elif dim is None:
        y, yt = ours.prod(), theirs.prod()
    else:
        y, yt = ours.prod(dim), theirs.prod(dim)
    torch_bits.assert_equal(_bits(y), _bits(yt))


def test_bfloat16_prod_out_keeps_the_rounded_products():
    """prod(..., out=) into a bfloat16 tensor gets the same values (fuzz 67000840's form)."""
    x = tg.tensor(ROWS).to(tg.bfloat16)
    xt = torch.tensor(ROWS).to(torch.bfloat16)
    out, out_t = tg.empty(0, dtype=tg.bfloat16), torch.empty(0, dtype=torch.bfloat16)
    tg.prod(x, 1, True, out=out)
    torch.prod(xt, 1, True, out=out_t)
    assert tuple(out.shape) == tuple(out_t.shape)
    np.testing.assert_array_equal(_bits(out), _bits(out_t))


@pytest.mark.parametrize("name,kernel", [("i1", "i1_backward"), ("i1e", "i1e_backward")])
def test_bfloat16_i1_backward_has_no_kernel(name, kernel):
    """PyTorch's i1 / i1e backward kernels have no bfloat16 loop (as none for float16): its
    backward raises NotImplementedError (fuzz 67000579)."""
    x = torch.tensor([-0.5, 0.3, 1.0]).to(torch.bfloat16).requires_grad_()
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for'):
        getattr(torch.special, name)(x).sum().backward()
    ours = tg.tensor([-0.5, 0.3, 1.0]).to(tg.bfloat16).requires_grad_()
    y = getattr(tg.special, name)(ours)
    np.testing.assert_array_equal(_bits(y), _bits(getattr(torch.special, name)(x)))
    with pytest.raises(NotImplementedError,
                       match=f"\"{kernel}\" not implemented for 'BFloat16'"):
        y.sum().backward()


@pytest.mark.parametrize("name", ["lt_", "greater_", "not_equal_", "eq_", "le_", "ge_"])
@pytest.mark.parametrize("case", ["self-requires-grad", "operand-requires-grad", "number"])
def test_in_place_comparison_of_floats_records_a_zero_gradient(name, case):
    """A float self's in-place comparison with an operand that requires grad makes self require
    grad, and the operand gets a zero .grad, not None (fuzz 67100120, 67100185)."""
    results = []
    for lib in (tg, torch):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        o = lib.tensor([0.5, 0.5, 5.0], requires_grad=True)
        x = lib.tensor([1.0, -2.0, 3.0]) if case == "operand-requires-grad" else a * 1
        y = getattr(x, name)(0.5 if case == "number" else o)
        got = [y is x, y.requires_grad, y.tolist()]
        if y.requires_grad:
            (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        got += [None if t.grad is None else t.grad.tolist() for t in (a, o)]
        results.append(got)
    assert results[0] == results[1]


def test_bfloat16_vander_runs_where_linalg_vander_refuses():
    """torch.vander computes in bfloat16; only torch.linalg.vander refuses it (fuzz 67100148)."""
    values = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    x, xt = tg.tensor(values).to(tg.bfloat16), torch.tensor(values).to(torch.bfloat16)
    for kwargs in ({}, {"N": 4, "increasing": True}):
        y, yt = tg.vander(x, **kwargs), torch.vander(xt, **kwargs)
        assert y.dtype == tg.bfloat16
        np.testing.assert_array_equal(_bits(y), _bits(yt))
    with pytest.raises(RuntimeError, match="linalg.vander supports floating point"):
        torch.linalg.vander(xt)
    with pytest.raises(RuntimeError, match="linalg.vander supports floating point"):
        tg.linalg.vander(x)


NORMS = [
    ("matrix_norm_2", lambda L, x: L.linalg.matrix_norm(x, 2)),
    ("matrix_norm_nuc", lambda L, x: L.linalg.matrix_norm(x, "nuc")),
    ("matrix_norm_dtype", lambda L, x: L.linalg.matrix_norm(x, -2, dtype=L.float32)),
    ("linalg_norm_2", lambda L, x: L.linalg.norm(x, 2)),
    ("norm_nuc", lambda L, x: L.norm(x, p="nuc")),
    ("nuclear_norm", lambda L, x: L.nuclear_norm(x)),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,call", NORMS, ids=[n[0] for n in NORMS])
def test_bfloat16_singular_value_norms_refuse(name, call):
    """The matrix norms of singular values refuse bfloat16 in linalg.matrix_norm's words
    (fuzz 66700122, 67100049); the others compute."""
    values = np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32)
    message = "linalg.matrix_norm: Low precision dtypes not supported. Got BFloat16"
    with pytest.raises(RuntimeError, match=message):
        call(torch, torch.tensor(values).to(torch.bfloat16))
    with pytest.raises(RuntimeError, match=message):
        call(tg, tg.tensor(values).to(tg.bfloat16))


@pytest.mark.parametrize("call", [lambda L, x: L.linalg.norm(x), lambda L, x: x.norm(p="fro", dim=1),
                                  lambda L, x: L.linalg.matrix_norm(x, 1),
                                  lambda L, x: L.linalg.norm(x, 2, dim=1)])
def test_bfloat16_other_norms_compute(call):
    values = np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32)
    ours, theirs = call(tg, tg.tensor(values).to(tg.bfloat16)), \
        call(torch, torch.tensor(values).to(torch.bfloat16))
    assert ours.dtype == tg.bfloat16
    np.testing.assert_array_equal(_bits(ours), _bits(theirs))


@pytest.mark.parametrize("call,error", [
    (lambda L, A, b, M: L.linalg.tensorsolve(A, b), NotImplementedError),
    (lambda L, A, b, M: L.pinverse(M), RuntimeError),
    (lambda L, A, b, M: M.pinverse(), RuntimeError),
])
def test_bfloat16_tensorsolve_and_pinverse_refuse(call, error):
    """tensorsolve (an LU solve) and pinverse (linalg.pinv) have no bfloat16 kernel (fuzz
    67100226, 67100384)."""
    def args(L):
        return (L.tensor([[2.0, 1.0], [1.0, 3.0]]).to(L.bfloat16),
                L.tensor([1.0, 2.0]).to(L.bfloat16), L.ones(3, 2).to(L.bfloat16))
    with pytest.raises(error) as theirs:
        call(torch, *args(torch))
    with pytest.raises(error) as ours:
        call(tg, *args(tg))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["leaky_relu_", "elu_", "hardtanh_", "celu_", "selu_"])
def test_in_place_activation_of_a_broadcast_view_that_stretches_nothing(name):
    """broadcast_tensors(a, 0-d)[0] is a view numpy marks read-only; PyTorch writes it like
    any view (fuzz 67100440) and refuses only an expand whose elements share memory."""
    results = []
    for lib in (tg, torch):
        a = lib.tensor([1.0, -2.0]) * 1
        v = lib.broadcast_tensors(a, lib.tensor(0.5))[0]
        with lib.no_grad():
            getattr(lib.nn.functional, name)(v)
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            getattr(lib.nn.functional, name)(lib.tensor([1.0, -2.0]).expand(3, 2))
        results.append(a.tolist())
    np.testing.assert_array_equal(results[0], results[1])
