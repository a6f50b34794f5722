"""Cases from PyTorch's own test/test_torch.py (TestTorch, TestTorchDeviceType) where tapegrad
differed from PyTorch: each runs the same code under both libraries and compares."""
import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:      # noqa: BLE001 - the exception type is what is compared
        return (type(e).__name__, str(e))


# -- set_ with a tensor source and a geometry; storage_offset of a storage view -----------------

def test_set_tensor_source_with_geometry_views_its_storage(torch):
    # PyTorch's set_(Tensor source, storage_offset, size, stride) views source's storage at
    # source's offset plus storage_offset; it was silently taken as set_(source).
    for T in (torch, tg):
        b = T.arange(6.)
        a = T.zeros(1).set_(b, 1, (2,))
        assert a.tolist() == [1.0, 2.0] and a.storage_offset() == 1
        a.add_(10)
        assert b.tolist() == [0.0, 11.0, 12.0, 3.0, 4.0, 5.0]
        c = T.zeros(1).set_(b[2:], 1, (2,), (2,))
        assert c.tolist() == [3.0, 5.0] and c.storage_offset() == 3 and c.stride() == (2,)
        d = T.zeros(1).set_(b, 0, (2,), (3,))
        assert d.tolist() == [0.0, 3.0]


def test_set_storage_reports_its_offset(torch):
    for T in (torch, tg):
        b = T.arange(6.)
        a = T.zeros(1).set_(b.untyped_storage(), 2, (2,))
        assert a.storage_offset() == 2 and a.data_ptr() - b.data_ptr() == 8
        i = T.zeros(1, dtype=T.int32).set_(b.untyped_storage(), 2, (2,))
        assert i.storage_offset() == 2 and i.tolist() == [1073741824, 1077936128]


def test_set_offset_without_size_is_a_type_error(torch):
    for T in (torch, tg):
        b = T.arange(6.)
        for fn in (lambda: T.zeros(1).set_(b, 1), lambda: T.zeros(1).set_(b.untyped_storage(), 1)):
            kind, msg = _outcome(fn)
            assert kind == "TypeError" and "set_() received an invalid combination" in msg


# -- dtype names in masked_scatter / put_ messages ----------------------------------------------

def test_complex_dtype_names_in_messages(torch):
    for T in (torch, tg):
        z = T.zeros(3, dtype=T.complex64)
        kind, msg = _outcome(lambda: z.clone().put_(T.tensor([1]), T.tensor([1.])))
        assert kind == "RuntimeError" and "self.dtype = ComplexFloat and source.dtype = Float" in msg
        kind, msg = _outcome(lambda: z.masked_scatter(T.tensor([True, False, True]), T.ones(3)))
        assert kind == "RuntimeError" and "ComplexFloat and Float" in msg


# -- uniform_ bounds (tapegrad filled with inf/nan or overflowed where PyTorch refuses) ----------

@pytest.mark.parametrize("dtype, lo, hi", [
    ("float32", 0, float("inf")), ("float32", -float("inf"), 0), ("float32", float("nan"), 0),
    ("float32", 0, 1e39), ("float16", 0, 1e6), ("float16", -60000, 60000),
    ("float64", -1e308, 1e308), ("float32", -3e38, 3e38), ("complex64", 0, float("inf")),
    ("float32", 5, 2)])
def test_uniform_bounds_are_checked(torch, dtype, lo, hi):
    expected = _outcome(lambda: torch.empty(3, dtype=getattr(torch, dtype)).uniform_(lo, hi))
    got = _outcome(lambda: tg.empty(3, dtype=getattr(tg, dtype)).uniform_(lo, hi))
    assert expected[0] == "RuntimeError"
    assert got == expected
    if not dtype.startswith("complex"):
        init = _outcome(lambda: tg.nn.init.uniform_(tg.empty(3, dtype=getattr(tg, dtype)), lo, hi))
        assert init == expected


def test_uniform_within_bounds_still_fills():
    t = tg.empty(1000, dtype=tg.float16).uniform_(-30000, 30000)
    assert float(t.min()) >= -30000 and float(t.max()) <= 30000


# -- bernoulli_ with a tensor p: p expands to self (expand's errors) -----------------------------

@pytest.mark.parametrize("self_shape, p_shape", [((5,), (3,)), ((5,), (2, 5)), ((2, 5), (5,))])
def test_bernoulli_tensor_p_expands(torch, self_shape, p_shape):
    expected = _outcome(lambda: tuple(torch.empty(self_shape).bernoulli_(
        torch.full(p_shape, 0.5)).shape))
    got = _outcome(lambda: tuple(tg.empty(self_shape).bernoulli_(tg.full(p_shape, 0.5)).shape))
    assert got == expected


# -- in-place writes whose index / mask / operand shares self's memory (test_*_mem_overlap) ------
# PyTorch refuses them ("unsupported operation: some elements of the input tensor and the
# written-to tensor refer to a single memory location"); tapegrad wrote order-dependent values.

def _index_writes(T):
    i = lambda: T.tensor([2, 1, 0])     # noqa: E731
    return {
        "index_add_": lambda a: a.index_add_(0, a, a.clone()),
        "index_copy_": lambda a: a.index_copy_(0, a, a.clone()),
        "index_fill_": lambda a: a.index_fill_(0, a, 0),
        "put_ index": lambda a: a.put_(a, a.clone()),
        "put_ source": lambda a: a.put_(a.clone(), a),
        "put_ accumulate": lambda a: a.put_(a, a.clone(), accumulate=True),
        "scatter_": lambda a: a.scatter_(0, a, a.clone()),
        "scatter_ value": lambda a: a.scatter_(0, a, 5),
        "scatter_add_": lambda a: a.scatter_add_(0, a, a.clone()),
        "scatter_reduce_": lambda a: a.scatter_reduce_(0, a, a.clone(), "amax"),
        "index_put_": lambda a: a.index_put_((a,), a.clone()),
        "index_put_ accumulate": lambda a: a.index_put_((a,), a.clone(), accumulate=True),
    }, i


@pytest.mark.parametrize("case", list(_index_writes(tg)[0]))
def test_index_sharing_self_is_refused(torch, case):
    for T in (torch, tg):
        ops, make = _index_writes(T)
        a = make()
        kind, msg = _outcome(lambda: ops[case](a))
        assert kind == "RuntimeError" and "refer to a single memory location" in msg, (T, msg)
        assert a.tolist() == [2, 1, 0]      # nothing written


def test_masked_fill_mask_partly_sharing_self(torch):
    for T in (torch, tg):
        m = T.tensor([True, False, True, True])
        kind, msg = _outcome(lambda: m[1:].masked_fill_(m[:-1], False))
        assert kind == "RuntimeError" and "single memory location" in msg
        assert m.tolist() == [True, False, True, True]
        m.masked_fill_(m, False)            # the same memory, same layout: allowed
        assert m.tolist() == [False] * 4
        x = T.arange(6.)
        x.masked_fill_(x > 2, x[1])         # a 0-d value inside self is read first
        assert x.tolist() == [0.0, 1.0, 2.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("op", ["__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
                                "__irshift__"])
def test_in_place_operators_refuse_partial_overlap(torch, op):
    for T in (torch, tg):
        for lhs, rhs in ((slice(None, -1), slice(1, None)), (slice(1, None), slice(None, -1))):
            x = T.tensor([1, 2, 3, 4])
            kind, msg = _outcome(lambda: getattr(x[lhs], op)(x[rhs]))
            assert kind == "RuntimeError" and "single memory location" in msg
            assert x.tolist() == [1, 2, 3, 4]
        x = T.tensor([1, 2, 3, 4])
        getattr(x, op)(x)                   # full overlap is fine
        y = T.tensor([1, 2, 3, 4])
        getattr(y, op)(T.tensor([1, 2, 3, 4]))
        assert x.tolist() == y.tolist()


def _setitem_sharing(T):
    i = lambda: T.tensor([2, 1, 0])                 # noqa: E731
    b = lambda: T.tensor([True, False, True])       # noqa: E731
    return [
        (i, lambda a: a.__setitem__(a, 7)),
        (i, lambda a: a.__setitem__(a, T.tensor([7]))),
        (i, lambda a: a.__setitem__(a, a.clone())),
        (i, lambda a: a.__setitem__(a[:2], 5)),
        (i, lambda a: a.__setitem__((Ellipsis, a), 9)),
        (i, lambda a: a.view(3, 1).__setitem__((a, 0), 9)),
        (b, lambda a: a.__setitem__(a, T.tensor([False, True]))),
        (i, lambda a: a.index_reduce_(0, a, a.clone(), "prod", include_self=False)),
        (lambda: T.tensor([2., 1., 0.]), lambda a: a.index_reduce_(0, a.long(), a, "amax")),
    ]


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("k", range(len(_setitem_sharing(tg))))
def test_index_put_by_setitem_refuses_an_index_sharing_self(torch, k):
    for T in (torch, tg):
        make, write = _setitem_sharing(T)[k]
        a = make()
        before = a.tolist()
        kind, msg = _outcome(lambda: write(a))
        assert kind == "RuntimeError" and "single memory location" in msg
        assert a.tolist() == before


def test_setitem_index_sharing_self_still_allowed_where_pytorch_allows(torch):
    for T in (torch, tg):
        m = T.tensor([True, False, True])
        m[m] = False                    # one mask and a number: masked_fill_, no check
        assert m.tolist() == [False, False, False]
        a = T.tensor([2, 1, 0])
        a[a.clone()] = 7
        assert a.tolist() == [7, 7, 7]
        c = T.tensor([0, 1, 2])
        c[c[0]] = 4                     # a 0-d index is a select, not index_put_
        assert c.tolist() == [4, 1, 2]


def test_contains_names_the_element_first(torch):
    for T in (torch, tg):
        kind, msg = _outcome(lambda: T.tensor([1, 2]) in T.tensor([1, 2, 3]))
        assert kind == "RuntimeError"
        assert "size of tensor a (2) must match the size of tensor b (3)" in msg


# -- dtype shortcuts honour memory_format (test_memory_format_type_shortcuts) --------------------

@pytest.mark.parametrize("name", ["byte", "char", "double", "bool", "half", "int", "long",
                                  "short", "float"])
@pytest.mark.parametrize("fmt, shape", [("channels_last", (4, 3, 8, 8)),
                                        ("channels_last_3d", (4, 3, 4, 4, 4))])
def test_dtype_shortcut_memory_format(torch, name, fmt, shape):
    def facts(T):
        mf = getattr(T, fmt)
        x = T.arange(float(np.prod(shape))).reshape(shape).contiguous(memory_format=mf)
        out = []
        for kw in ({}, {"memory_format": T.contiguous_format},
                   {"memory_format": T.preserve_format}, {"memory_format": mf}):
            y = getattr(x, name)(**kw)
            out.append((y.is_contiguous(), y.is_contiguous(memory_format=mf), y.stride(),
                        y.tolist() == getattr(x.contiguous(), name)().tolist()))
        return out
    assert facts(tg) == facts(torch)


# -- searchsorted / bucketize with NaN (or unordered) boundaries: PyTorch's binary search ---------

def test_bucketize_nan_boundaries_follow_pytorch(torch):
    # numpy's searchsorted orders NaN last; PyTorch's search moves right past a NaN boundary
    # (SILENT before: [2, 2, 0, 2] where PyTorch gives [3, 3, 0, 3])
    values = [float("nan"), float("inf"), -float("inf"), 2.0]
    bounds = [0.0, 1.0, float("nan")]
    for right in (False, True):
        expected = torch.bucketize(torch.tensor(values), torch.tensor(bounds), right=right)
        got = tg.bucketize(tg.tensor(values), tg.tensor(bounds), right=right)
        assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_searchsorted_matches_on_nan_and_unsorted_rows(torch, seed):
    rng = np.random.default_rng(seed)
    b = rng.integers(-3, 4, (3, 6)).astype(float)
    b[rng.random(b.shape) < 0.25] = np.nan
    v = rng.integers(-4, 5, (3, 5)).astype(float)
    v[rng.random(v.shape) < 0.2] = np.nan
    for right in (False, True):
        for bb, vv in ((b, v), (b[0], v[0]), (np.sort(b, -1), v)):
            expected = torch.searchsorted(torch.tensor(bb), torch.tensor(vv), right=right)
            got = tg.searchsorted(tg.tensor(bb), tg.tensor(vv), right=right)
            assert got.tolist() == expected.tolist()


# -- torch._check family (TestTorch.test_check) ---------------------------------------------------

@pytest.mark.parametrize("name, error", [("_check", RuntimeError), ("_check_index", IndexError),
                                         ("_check_value", ValueError), ("_check_type", TypeError),
                                         ("_check_not_implemented", NotImplementedError)])
def test_check_family(torch, name, error):
    for T in (torch, tg):
        check = getattr(T, name)
        assert check(True) is None
        assert check(True, "not called, not checked") is None
        cases = [(lambda: check(False), error, "Expected cond to be True"),
                 (lambda: check(False, lambda: "message"), error, "message"),
                 (lambda: check(False, lambda: T.arange(4)), error, str(T.arange(4))),
                 (lambda: check("wrong type"), TypeError, "cond must be a bool"),
                 (lambda: check(T.tensor(True)), TypeError, "cond must be a bool"),
                 (lambda: check(False, "not callable"), TypeError, "message must be a callable")]
        for fn, kind, phrase in cases:
            with pytest.raises(kind) as info:
                fn()
            assert phrase in str(info.value)


def test_check_tensor_all(torch):
    for T in (torch, tg):
        assert T._check_tensor_all(T.tensor([True, True])) is None
        for fn, kind in ((lambda: T._check_tensor_all(T.tensor([True, False])), RuntimeError),
                         (lambda: T._check_tensor_all(T.tensor([1])), TypeError),
                         (lambda: T._check_tensor_all(True), TypeError)):
            with pytest.raises(kind):
                fn()
        with pytest.raises(ValueError, match="msg"):
            T._check_with(ValueError, False, lambda: "msg")


def test_setitem_too_many_indices_in_pytorch_words(torch):
    # (numpy's "too many indices for array: array is 3-dimensional, but 4 were indexed" leaked)
    for T in (torch, tg):
        for key in ((1, 1, 1, 1), (1, 1, 1, (1, 1)), (3,) * 8, (1, T.tensor([0]), 1, 1)):
            r = T.zeros(3, 3, 3)
            with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
                r[key] = 1


# -- argument parsing (TestTorch.test_parsing_double / test_parsing_intlist) ----------------------

def test_isclose_tolerances_as_zero_dim_tensors(torch):
    for T in (torch, tg):
        x = T.tensor([1.0, 2.0])
        assert T.isclose(x, x + 0.5, T.tensor(1), T.tensor(0)).tolist() == [True, True]
        assert T.isclose(x, x + 0.5, T.tensor(0.2), T.tensor(0.)).tolist() == [False, True]
        for rtol in (T.tensor(1.5, requires_grad=True), T.tensor([1.0, 2.0]), "1", None, 1j):
            with pytest.raises(TypeError, match=r"argument 'rtol' \(position 3\) must be float"):
                T.isclose(x, x, rtol, 1.0)


def test_factory_sizes_take_zero_dim_integer_arrays(torch):
    for T in (torch, tg):
        assert T.ones((np.array(3), np.int64(4))).shape == (3, 4)
        assert T.ones(np.int64(3), np.array(4)).shape == (3, 4)
        assert T.zeros(np.array(2)).shape == (2,)
        assert T.randn((np.array(2), np.array(1))).shape == (2, 1)
        for bad in ((np.array(3.), T.tensor(4)), (3., T.tensor(4))):
            with pytest.raises(TypeError):
                T.ones(bad)


# -- scatter family on a 0-d self with a 1-d index (numpy's ValueError before) --------------------

@pytest.mark.parametrize("call", [
    lambda T, x, s: x.scatter_add(0, T.tensor([0, 0]), s),
    lambda T, x, s: x.scatter_add(-1, T.tensor([0]), s[:1]),
    lambda T, x, s: x.scatter(0, T.tensor([0, 0]), s),
    lambda T, x, s: x.scatter_reduce(0, T.tensor([0, 0]), s, "amax"),
    lambda T, x, s: x.scatter_reduce(0, T.tensor([0, 0]), s, "mean", include_self=False),
    lambda T, x, s: x.scatter_reduce(0, T.tensor([0, 0]), s, "prod")])
def test_scatter_into_zero_dim_self(torch, call):
    def run(T):
        x = T.tensor(5., dtype=T.float64, requires_grad=True)
        s = T.tensor([7., 1.], dtype=T.float64, requires_grad=True)
        y = call(T, x, s)
        y.backward()
        return (y.item(), y.shape, y.grad_fn.name(), x.grad.item(), s.grad.tolist())
    assert run(tg) == run(torch)


def test_scatter_into_zero_dim_self_errors(torch):
    for T in (torch, tg):
        with pytest.raises(RuntimeError, match="index 1 is out of bounds for dimension 0"):
            T.tensor(5.).scatter_add(0, T.tensor([1]), T.tensor([7.]))
        with pytest.raises(IndexError, match="Dimension out of range"):
            T.tensor(5.).scatter_add(1, T.tensor([0]), T.tensor([7.]))


# -- error wording where tapegrad's differed --------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda T: T.dist(T.ones(3).long(), T.ones(3).long()),
    lambda T: T.dist(T.ones(3).int(), T.ones(3).int()),
    lambda T: T.ones(3).addmm_(T.ones(2, 4), T.ones(4, 3)),
    lambda T: T.ones(1, 3).baddbmm_(T.ones(1, 2, 4), T.ones(1, 4, 3)),
    lambda T: T.ones(3).addr_(T.ones(2), T.ones(3)),
    lambda T: T.ones(2, 3, 1).addr_(T.ones(2), T.ones(3)),
    lambda T: T.ones(1, 3).addr_(T.ones(2), T.ones(3)),
    lambda T: T.zeros(3, 4).index_put((T.tensor([True, False]),), T.tensor(1.)),
    lambda T: T.zeros(3, 4).index_put((T.tensor([0, 1]), T.tensor([True, False, True])),
                                      T.tensor(1.)),
    lambda T: T.zeros(3, 4).index_put((T.ones(3, 3, dtype=T.bool),), T.tensor(1.),
                                      accumulate=True)])
def test_error_wording(torch, call):
    expected = _outcome(lambda: call(torch))
    assert expected[0] != "ok"
    assert _outcome(lambda: call(tg)) == expected
