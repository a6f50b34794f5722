"""The out= argument of the public functions that take it in PyTorch (tapegrad/_out_arg.py over
the core's write_out): values, dtypes and shapes against torch, the resize warning, the cast
rule, tuple outs, and the refusal when an argument requires grad."""
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _out_arg

X = [[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]]
P = [[0.2, 0.4, 0.6], [0.8, 0.1, 0.9]]


def cases(lib):
    """(name, call(out), make_out): one per function family."""
    x = lib.tensor(X)
    p = lib.tensor(P)
    i = lib.tensor([[1, 2, 3], [4, 5, 6]])
    m = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    e = lambda *s, dtype=None: lib.empty(*s, dtype=dtype)      # noqa: E731
    f = lambda *s: lib.full(s, 7.0)                            # noqa: E731
    return {
        "tanh": (lambda o: lib.tanh(x, out=o), lambda: e(2, 3)),
        "exp": (lambda o: lib.exp(x, out=o), lambda: e(0)),
        "sin": (lambda o: lib.sin(x, out=o), lambda: f(2, 3)),
        "sqrt": (lambda o: lib.sqrt(p, out=o), lambda: e(2, 3, dtype=lib.float64)),
        "log": (lambda o: lib.log(p, out=o), lambda: e(0)),
        "abs": (lambda o: lib.abs(i, out=o), lambda: e(0, dtype=lib.long)),
        "neg": (lambda o: lib.neg(x, out=o), lambda: e(0)),
        "sigmoid": (lambda o: lib.sigmoid(x, out=o), lambda: e(0)),
        "add": (lambda o: lib.add(x, p, out=o), lambda: e(0)),
        "sub": (lambda o: lib.sub(x, 2, out=o), lambda: e(0)),
        "mul": (lambda o: lib.mul(x, p, out=o), lambda: e(2, 3)),
        "div": (lambda o: lib.div(x, p, out=o), lambda: e(0)),
        "pow": (lambda o: lib.pow(p, 2, out=o), lambda: e(0)),
        "maximum": (lambda o: lib.maximum(x, p, out=o), lambda: e(0)),
        "atan2": (lambda o: lib.atan2(x, p, out=o), lambda: e(0)),
        "eq": (lambda o: lib.eq(x, p, out=o), lambda: e(0, dtype=lib.bool)),
        "gt to float": (lambda o: lib.gt(x, p, out=o), lambda: e(0)),
        "clamp": (lambda o: lib.clamp(x, -1, 1, out=o), lambda: e(0)),
        "where": (lambda o: lib.where(x > 0, x, p, out=o), lambda: e(0)),
        "matmul": (lambda o: lib.matmul(x, m, out=o), lambda: e(2, 2)),
        "mm": (lambda o: lib.mm(x, m, out=o), lambda: e(0)),
        "bmm": (lambda o: lib.bmm(x[None], m[None], out=o), lambda: e(0)),
        "addmm": (lambda o: lib.addmm(p[:, :2], x, m, out=o), lambda: e(0)),
        "cat": (lambda o: lib.cat([x, p], 1, out=o), lambda: e(0)),
        "stack": (lambda o: lib.stack([x, p], out=o), lambda: e(0)),
        "sum dim": (lambda o: lib.sum(x, 1, out=o), lambda: e(0)),
        "sum to long": (lambda o: lib.sum(x, 1, out=o), lambda: e(0, dtype=lib.long)),
        "sum int to float": (lambda o: lib.sum(i, 0, out=o), lambda: e(0)),
        "mean dim": (lambda o: lib.mean(x, 0, out=o), lambda: e(0)),
        "prod dim": (lambda o: lib.prod(x, 1, keepdim=True, out=o), lambda: e(0)),
        "cumsum": (lambda o: lib.cumsum(x, 1, out=o), lambda: e(0)),
        "max dim": (lambda o: lib.max(x, 1, out=o), lambda: (e(0), e(0, dtype=lib.long))),
        "min dim": (lambda o: lib.min(x, 0, out=o), lambda: (e(0), e(0, dtype=lib.long))),
        "sort": (lambda o: lib.sort(x, 1, out=o), lambda: (e(0), e(0, dtype=lib.long))),
        "topk": (lambda o: lib.topk(x, 2, out=o), lambda: (e(0), e(0, dtype=lib.long))),
        "argmax": (lambda o: lib.argmax(x, 1, out=o), lambda: e(0, dtype=lib.long)),
        "logsumexp": (lambda o: lib.logsumexp(x, 1, out=o), lambda: e(0)),
        "arange": (lambda o: lib.arange(5, out=o), lambda: e(0, dtype=lib.float64)),
        "zeros": (lambda o: lib.zeros(2, 2, out=o), lambda: e(0, dtype=lib.long)),
        "linspace": (lambda o: lib.linspace(0, 1, 5, out=o), lambda: e(0)),
        "tril": (lambda o: lib.tril(x, out=o), lambda: e(0)),
        "index_select": (lambda o: lib.index_select(x, 1, lib.tensor([2, 0]), out=o),
                         lambda: e(0)),
        "gather": (lambda o: lib.gather(x, 1, lib.tensor([[0], [2]]), out=o), lambda: e(0)),
        "outer": (lambda o: lib.outer(x[0], p[1], out=o), lambda: e(0)),
        "logical_and": (lambda o: lib.logical_and(x > 0, p > 0.3, out=o),
                        lambda: e(0, dtype=lib.bool)),
        "nan_to_num": (lambda o: lib.nan_to_num(x / 0, out=o), lambda: e(0)),
        "square": (lambda o: lib.square(x, out=o), lambda: e(0)),
        "round": (lambda o: lib.round(x, out=o), lambda: e(0)),
        "lerp": (lambda o: lib.lerp(x, p, 0.25, out=o), lambda: e(0)),
    }


def as_list(v):
    return [t.tolist() for t in v] if isinstance(v, tuple) else v.tolist()


@pytest.mark.parametrize("name", sorted(cases(tg)))
def test_out_matches_torch(name):
    torch = pytest.importorskip("torch")
    call, make = cases(tg)[name]
    tcall, tmake = cases(torch)[name]
    out, tout = make(), tmake()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = call(out)
    with warnings.catch_warnings(record=True) as tcaught:
        warnings.simplefilter("always")
        tres = tcall(tout)
    if isinstance(out, tuple):
        assert all(r is o for r, o in zip(res, out)) and type(res).__name__ in (
            type(tres).__name__, type(tres).__name__.replace("_out", ""))
        pairs = list(zip(out, tout))
    else:
        assert res is out
        pairs = [(out, tout)]
    for mine, theirs in pairs:
        assert str(mine.dtype) == str(theirs.dtype) and tuple(mine.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)
    resized = lambda ws: [w for w in ws if "was resized" in str(w.message)]     # noqa: E731
    assert len(resized(caught)) == len(resized(tcaught))


def test_out_refused_when_an_argument_requires_grad():
    x = tg.tensor(X, requires_grad=True)
    msg = r"tanh\(\): functions with out=... arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=msg):
        tg.tanh(x, out=tg.empty(2, 3))
    with pytest.raises(RuntimeError, match=msg):
        tg.tanh(x.detach(), out=tg.empty(2, 3, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"^cat\(\): functions with out="):
        tg.cat([x.detach(), x], out=tg.empty(0))
    with tg.no_grad():                                  # allowed without grad mode
        out = tg.tanh(x, out=tg.empty(2, 3))
    np.testing.assert_allclose(out.numpy(), np.tanh(np.array(X, dtype=np.float32)), rtol=1e-6)


def test_out_cast_rule_and_bad_out():
    x = tg.tensor(X)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        tg.exp(x, out=tg.empty(2, 3, dtype=tg.long))
    with pytest.raises(TypeError, match=r"tanh\(\): argument 'out' must be Tensor, not int"):
        tg.tanh(x, out=3)
    out = tg.empty(2, 3)
    version = out._version
    tg.sin(x, out=out)
    assert out._version == version + 1
    y = tg.tensor(X)                        # out= aliasing the input: computed, then written
    tg.exp(y, out=y)
    np.testing.assert_allclose(y.numpy(), np.exp(np.array(X, dtype=np.float32)), rtol=1e-6)


def test_resize_warning_only_for_non_empty_out():
    x = tg.tensor(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.tanh(x, out=tg.empty(0))
        tg.tanh(x, out=tg.empty(5))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "had shape [5], which does not match the required output " \
        "shape [2, 3]" in messages[0]
    assert caught[0].filename == __file__           # (points at the caller, as torch's)


def test_every_listed_function_takes_out():
    import inspect
    for name in _out_arg.OUT_FUNCTIONS:
        fn = getattr(tg, name)
        assert "out" in inspect.signature(fn).parameters, name


def test_out_functions_pass_through_without_out():
    x = tg.tensor(X, requires_grad=True)
    y = tg.tanh(x)
    assert y.grad_fn.name() == "TanhBackward0"
    # one function behind two entries, each naming itself (PyTorch's ger is not its outer)
    assert tg.ger.__wrapped__ is tg.outer.__wrapped__ and tg.ger is not tg.outer


def test_wrapper_forwards_every_calling_form():
    """The wrapper (a C type: out_arg_call.h) hands a call without out to the function with the
    caller's own arguments: positional, keywords, out=None, errors from the function itself; a
    call with out by keyword in any position reaches write_out."""
    import pickle
    x = tg.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert tg.sum(x, 1, keepdim=True).tolist() == [[-1.0], [7.0]]
    assert tg.sum(x, dim=0, out=None).tolist() == [4.0, 2.0]
    assert tg.clamp(x, max=2.0, min=-1.0).tolist() == [[1.0, -1.0], [2.0, 2.0]]
    with pytest.raises(TypeError):
        tg.tanh(x, bogus=1)
    out = tg.empty(2, 2)
    res = tg.clamp(x, out=out, min=0.0)
    assert res is out and out.tolist() == [[1.0, 0.0], [3.0, 4.0]]
    long_out = tg.empty(2, dtype=tg.long)
    assert tg.sum(x, 1, out=long_out).tolist() == [-1, 7]      # computes in out's dtype
    assert pickle.loads(pickle.dumps(tg.tanh)) is tg.tanh
    assert repr(tg.tanh) == "<function tanh>" and tg.tanh.__name__ == "tanh"
    assert tg.tanh.__out_arg_of__ is not tg.tanh and not tg.tanh.dtype_from_out
