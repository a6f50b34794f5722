"""Creation functions added in tapegrad.creation (linspace, eye, randint, randperm, normal) and the
in-place initialisers (Tensor.normal_, uniform_, zero_, fill_): values, dtypes, seeding, PyTorch's
errors, the leaf / no_grad rules of in-place ops, and PyTorch parity."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.creation import eye, linspace, manual_seed, normal, randint, randperm

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


# -- linspace ------------------------------------------------------------------------------------

def test_linspace_values_and_dtypes():
    t = linspace(0, 1, 5)
    assert t.dtype == tg.float32 and t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert linspace(0, 10, 5).dtype == tg.float32                     # ints still give float32
    assert linspace(3, 10, 1).tolist() == [3.0]
    assert linspace(3, 10, 0).shape == (0,)
    assert linspace(0, 10, 7, dtype=tg.int64).tolist() == [0, 1, 3, 5, 6, 8, 10]
    assert linspace(-3, 10, 7, dtype=tg.int64).tolist() == [-3, 0, 1, 3, 5, 7, 10]
    assert linspace(0, 1, 3, dtype=tg.float64).dtype == tg.float64
    assert linspace(tg.tensor(0.0), tg.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    t = linspace(0, 1, 3, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    # PyTorch's rounding: the middle value of linspace(-1, 1, 7) is -2.98e-08, not 0
    assert linspace(-1, 1, 7).tolist()[3] == pytest.approx(-2.9802322e-08)


def test_linspace_bad_input():
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        linspace(3, 10, -1)
    with pytest.raises(TypeError, match="steps"):
        linspace(0, 1, 3.0)
    with pytest.raises(TypeError):
        linspace(3, 10)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        linspace(0, 1, 3, dtype=tg.int64, requires_grad=True)


# -- eye -----------------------------------------------------------------------------------------

def test_eye():
    t = eye(3)
    assert t.dtype == tg.float32 and t.tolist() == np.eye(3).tolist()
    assert eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert eye(2, dtype=tg.int64).tolist() == [[1, 0], [0, 1]]
    assert eye(0).shape == (0, 0)
    assert eye(2, requires_grad=True).requires_grad


def test_eye_bad_input():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -1"):
        eye(2, -1)
    with pytest.raises(TypeError):
        eye(2.0)


# -- randint / randperm ----------------------------------------------------------------------------

def test_randint_forms_and_range():
    a = randint(10, (50,))
    assert a.dtype == tg.int64 and a.shape == (50,)
    assert 0 <= a.numpy().min() and a.numpy().max() < 10
    b = randint(3, 10, (3, 2))
    assert b.shape == (3, 2) and b.numpy().min() >= 3 and b.numpy().max() < 10
    c = randint(low=3, high=10, size=(40,))
    assert c.numpy().min() >= 3 and c.numpy().max() < 10
    assert randint(5, [2, 2]).shape == (2, 2)
    assert randint(5, (3,), dtype=tg.float32).dtype == tg.float32
    assert randint(0, 1, (4,)).tolist() == [0, 0, 0, 0]


def test_randint_is_seeded():
    manual_seed(3)
    a = randint(100, (20,)).tolist()
    manual_seed(3)
    assert randint(100, (20,)).tolist() == a


def test_randint_bad_input():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got "
                                           "from=5 >= to=3"):
        randint(5, 3, (3,))
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        randint(5, 5, (3,))
    with pytest.raises(TypeError, match="argument 'size' \\(position 2\\) must be tuple of ints, "
                                        "not int"):
        randint(5, 3)
    with pytest.raises(TypeError):
        randint(5)
    with pytest.raises(TypeError):
        randint(0.5, 5.5, (3,))
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can "
                                           "require gradients"):
        randint(5, (2,), requires_grad=True)


def test_randperm():
    p = randperm(10)
    assert p.dtype == tg.int64 and sorted(p.tolist()) == list(range(10))
    assert randperm(0).shape == (0,)
    assert randperm(3, dtype=tg.float32).dtype == tg.float32
    manual_seed(1)
    a = randperm(20).tolist()
    manual_seed(1)
    assert randperm(20).tolist() == a
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: "
                                           r"\[-1\]"):
        randperm(-1)


# -- normal ----------------------------------------------------------------------------------------

def test_normal_numbers():
    manual_seed(0)
    t = normal(2.0, 3.0, (20000,))
    assert t.dtype == tg.float32 and t.shape == (20000,)
    assert abs(t.numpy().mean() - 2.0) < 0.1 and abs(t.numpy().std() - 3.0) < 0.1
    assert normal(0.0, 1.0, size=(2, 3)).shape == (2, 3)
    assert normal(0.0, 1.0, (2,), dtype=tg.float64).dtype == tg.float64
    assert normal(0.0, 1.0, (2,), requires_grad=True).requires_grad
    assert normal(1.5, 0.0, (3,)).tolist() == [1.5, 1.5, 1.5]


def test_normal_tensors_and_grads():
    m = tg.zeros(3, requires_grad=True)
    s = tg.ones(3, requires_grad=True)
    out = normal(m, s)
    assert type(out.grad_fn).__name__ == "NormalBackward3"
    out.sum().backward()
    assert m.grad.tolist() == [0.0, 0.0, 0.0] and s.grad.tolist() == [0.0, 0.0, 0.0]
    assert type(normal(m, 2.0).grad_fn).__name__ == "NormalBackward1"
    assert type(normal(0.0, s).grad_fn).__name__ == "NormalBackward2"
    b = normal(tg.zeros(2, 1), tg.ones(3))
    assert b.shape == (2, 3) and b.grad_fn is None
    assert normal(tg.full((4,), 5.0), tg.zeros(4)).tolist() == [5.0] * 4


def test_normal_bad_input():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        normal(tg.zeros(3), -tg.ones(3))
    with pytest.raises(TypeError):
        normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        normal(tg.zeros(2), tg.ones(3))


# -- in-place initialisers ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", [lambda t: t.normal_(), lambda t: t.uniform_(),
                                  lambda t: t.zero_(), lambda t: t.fill_(2.0)])
def test_inplace_on_leaf_requiring_grad(call):
    x = tg.rand(3, requires_grad=True)
    before = x.detach().numpy().copy()
    with pytest.raises(RuntimeError, match=LEAF_MSG):
        call(x)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    with tg.no_grad():
        assert call(x) is x
    assert x.requires_grad and x.is_leaf and x.grad_fn is None


def test_inplace_values():
    x = tg.zeros(1000)
    storage = x.numpy()
    x.normal_(5.0, 0.1)
    assert abs(storage.mean() - 5.0) < 0.05                   # written into the same storage
    x.uniform_(2, 3)
    assert storage.min() >= 2 and storage.max() < 3
    x.uniform_(**{"from": -1, "to": 1})
    assert storage.min() >= -1 and storage.max() < 1
    assert x.zero_() is x and (storage == 0).all()
    assert x.fill_(2).tolist()[:2] == [2.0, 2.0]
    assert tg.zeros(3).fill_(tg.tensor(2.5)).tolist() == [2.5] * 3
    assert tg.zeros(3, dtype=tg.int64).fill_(2.7).tolist() == [2, 2, 2]
    assert tg.zeros(3, dtype=tg.bool).fill_(2).tolist() == [True] * 3
    assert tg.zeros(3).uniform_(1, 1).tolist() == [1.0] * 3
    assert tg.zeros(3).normal_(1, 0).tolist() == [1.0] * 3
    assert tg.zeros(3, dtype=tg.float16).uniform_().dtype == tg.float16
    # a detached view (.data) shares storage: initialising it initialises the parameter
    w = tg.zeros(4, requires_grad=True)
    w.data.fill_(3.0)
    assert w.detach().tolist() == [3.0] * 4


def test_inplace_is_seeded():
    manual_seed(5)
    a = tg.zeros(10).normal_().tolist()
    manual_seed(5)
    assert tg.zeros(10).normal_().tolist() == a


def test_inplace_on_non_leaf_records_zero_gradient():
    x = tg.rand(3, requires_grad=True)
    for method, args, name in [("zero_", (), "ZeroBackward0"), ("fill_", (3.0,), "FillBackward2"),
                               ("normal_", (), "NormalBackward0"),
                               ("uniform_", (), "UniformBackward0")]:
        y = x * 2
        assert getattr(y, method)(*args) is y
        assert type(y.grad_fn).__name__ == name
        assert not y.is_leaf
        (y * 5).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]
        x.grad = None
    y = x * 2
    y.fill_(3.0)
    assert y.detach().tolist() == [3.0, 3.0, 3.0]


def test_fill_with_tensor_value_gets_gradient():
    x = tg.rand(3, requires_grad=True)
    v = tg.tensor(2.0, requires_grad=True)
    y = x * 2
    y.fill_(v)
    assert type(y.grad_fn).__name__ == "FillBackward3"
    (y * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert v.grad.item() == 6.0
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    # a plain tensor filled with a tensor that requires grad joins the graph, as in PyTorch
    z = tg.zeros(2)
    z.fill_(v)
    assert z.requires_grad and type(z.grad_fn).__name__ == "FillBackward3"


def test_inplace_write_over_a_saved_value_raises_like_pytorch():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = h.exp()             # saves its output
    h2 = y * 1.0
    y.zero_()               # overwrites what ExpBackward0 needs
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h2.sum().backward()


def test_inplace_bad_input():
    i = tg.zeros(3, dtype=tg.int64)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                                                  "'Long'"):
        i.normal_()
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
        i.uniform_()
    with pytest.raises(RuntimeError, match=r"fill_ only supports 0-dimension value tensor but got "
                                           r"tensor with 1 dimensions\."):
        tg.zeros(3).fill_(tg.tensor([2.0]))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        tg.zeros(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but "
                                           r"found from=3 > to=1"):
        tg.zeros(3).uniform_(3, 1)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without "
                                           "overflow"):
        tg.zeros(3, dtype=tg.int8).fill_(300)


# -- PyTorch parity ----------------------------------------------------------------------------------

def test_parity_linspace_eye(torch):
    rng = np.random.default_rng(0)
    cases = [(-1, 1, 7), (0, 1, 7), (0.1, 1.3, 11), (-3.3, 7.7, 100), (3, -2, 13), (0.5, 9.7, 9)]
    cases += [(float(rng.normal() * 10), float(rng.normal() * 10), int(rng.integers(2, 200)))
              for _ in range(20)]
    for c in cases:
        for ours, theirs in ((tg.float32, torch.float32), (tg.float64, torch.float64),
                             (tg.int64, torch.int64)):
            np.testing.assert_array_equal(linspace(*c, dtype=ours).numpy(),
                                          torch.linspace(*c, dtype=theirs).numpy())
    assert linspace(0, 1, 4).dtype.name == str(torch.linspace(0, 1, 4).dtype).split(".")[1]
    for args in [(3,), (2, 4), (0,)]:
        np.testing.assert_array_equal(eye(*args).numpy(), torch.eye(*args).numpy())


def test_parity_inplace_names_and_errors(torch):
    for method, args in [("zero_", ()), ("fill_", (3.0,)), ("normal_", ()), ("uniform_", ())]:
        y = tg.rand(3, requires_grad=True) * 2
        ty = torch.rand(3, requires_grad=True) * 2
        getattr(y, method)(*args)
        getattr(ty, method)(*args)
        assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
        with pytest.raises(RuntimeError, match=LEAF_MSG):
            getattr(torch.rand(3, requires_grad=True), method)(*args)
    assert randint(5, (3,)).dtype.name == str(torch.randint(5, (3,)).dtype).split(".")[1]
    assert randperm(3).dtype.name == str(torch.randperm(3).dtype).split(".")[1]
    m = torch.zeros(3, requires_grad=True)
    assert type(torch.normal(m, 1.0).grad_fn).__name__ == \
        type(normal(tg.zeros(3, requires_grad=True), 1.0).grad_fn).__name__


# -- the default dtype -----------------------------------------------------------------------------

@pytest.fixture
def float64_default():
    tg.set_default_dtype(tg.float64)
    try:
        yield
    finally:
        tg.set_default_dtype(tg.float32)


def test_default_dtype_float64(float64_default):
    assert tg.get_default_dtype() == tg.float64
    assert tg.tensor([1.5]).dtype == tg.float64
    assert tg.zeros(2).dtype == tg.ones(2).dtype == tg.empty(2).dtype == tg.float64
    assert tg.full((2,), 1.5).dtype == tg.arange(0.0, 1.0, 0.5).dtype == tg.float64
    assert tg.linspace(0, 1, 3).dtype == tg.eye(2).dtype == tg.randn(2).dtype == tg.float64
    assert (tg.tensor([1, 2]) * 1.5).dtype == tg.float64  # int tensor with a Python float
    assert (tg.arange(3) / 2).dtype == tg.float64
    assert tg.tensor([1, 4]).sqrt().dtype == tg.float64
    assert tg.nn.Linear(2, 2).weight.dtype == tg.float64
    assert repr(tg.tensor([1.5])) == "tensor([1.5000])"
    assert repr(tg.tensor([1.5], dtype=tg.float32)) == "tensor([1.5000], dtype=torch.float32)"
    assert tg.tensor([1.5]).float().dtype == tg.float32


def test_default_dtype_errors_and_restore():
    with pytest.raises(TypeError, match="only floating-point types"):
        tg.set_default_dtype(tg.int64)
    assert tg.get_default_dtype() == tg.float32
    assert (tg.tensor([1, 2]) * 1.5).dtype == tg.float32
    assert tg.tensor([1.0], dtype=float).dtype == tg.float64  # Python's float is double


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            tg.set_default_tensor_type("torch.DoubleTensor")
        assert tg.get_default_dtype() == tg.float64
        tg.set_default_tensor_type(tg.FloatTensor)      # (warned once per process, as PyTorch)
        assert tg.get_default_dtype() == tg.float32
        with pytest.raises(TypeError, match="only floating-point"):
            tg.set_default_tensor_type("torch.IntTensor")
        assert isinstance(tg.ones(2, dtype=tg.float64), tg.DoubleTensor)
        assert not isinstance(tg.ones(2), tg.DoubleTensor)
    finally:
        tg.set_default_dtype(tg.float32)


def test_default_dtype_matches_torch(torch, float64_default):
    torch.set_default_dtype(torch.float64)
    try:
        for make in (lambda m: m.tensor([1.5, 2.0]), lambda m: m.zeros(2), lambda m: m.arange(3) / 2,
                     lambda m: m.tensor([1, 2]) * 0.5, lambda m: m.tensor([1.5], dtype=m.float32),
                     lambda m: m.nn.Linear(2, 2).bias.detach()):
            ours, theirs = make(tg), make(torch)
            assert str(ours.dtype) == str(theirs.dtype)
            if ours.shape != (2,) or ours.tolist() == theirs.tolist():   # (not the random bias)
                assert repr(ours) == repr(theirs)
    finally:
        torch.set_default_dtype(torch.float32)


# -- a non-int in a size: PyTorch's argument-parser message, naming factory and position --------

SIZE_TYPE_CASES = {
    "empty_packed_float_first": lambda T: T.empty((64.0, 1, 4, 4)),
    "zeros_packed_float_later": lambda T: T.zeros((1, 2.0)),
    "zeros_packed_none": lambda T: T.zeros((2, None)),
    "zeros_size_kw": lambda T: T.zeros(size=(2, 2.0)),
    "ones_varargs_float_later": lambda T: T.ones(1, 2.0),
    "empty_varargs_str": lambda T: T.empty(2, 3, "a"),
    "empty_varargs_float_first": lambda T: T.empty(2.0),
    "rand_varargs_float_first": lambda T: T.rand(2.0),
    "randn_packed": lambda T: T.randn((2.0,)),
    "randn_varargs": lambda T: T.randn(2, 2.0),
    "full_packed": lambda T: T.full((2.0,), 1),
    "full_packed_later": lambda T: T.full((2, 2.0), 1.0),
    "full_scalar_size": lambda T: T.full(2.0, 1.0),
    "randint_packed": lambda T: T.randint(3, (2.0,)),
    "randint_packed_later": lambda T: T.randint(3, (2, 2.0)),
    "new_zeros_packed": lambda T: T.ones(2).new_zeros((2.0,)),
    "new_empty_packed_later": lambda T: T.ones(2).new_empty((1, 2.0)),
    "new_ones_varargs": lambda T: T.ones(2).new_ones(1, 2.5),
    "new_full_later": lambda T: T.ones(2).new_full((2, 2.0), 1.0),
    "meta_zeros": lambda T: T.zeros((2.0,), device="meta"),
}


@pytest.mark.parametrize("name", sorted(SIZE_TYPE_CASES))
def test_float_in_size_message_matches_torch(torch, name):
    fn = SIZE_TYPE_CASES[name]
    with pytest.raises(TypeError) as expected:
        fn(torch)
    with pytest.raises(TypeError) as got:
        fn(tg)
    assert str(got.value) == str(expected.value)
