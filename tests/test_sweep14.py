"""Regressions found by the fourteenth sweep, whose cases are the `>>>` examples of PyTorch's own
docstrings (torch.*, Tensor.*, torch.nn.functional, torch.nn modules, torch.linalg, torch.fft,
torch.special, torch.nn.init, torch.nn.utils, torch.autograd, torch.distributions), run under
both libraries and compared."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """fn()'s result, or its exception's type name and message's first words."""
    try:
        return fn()
    except Exception as e:      # noqa: BLE001 (the type is the compared outcome)
        return type(e).__name__, " ".join(str(e).split()[:6])


# -- memory_format= of the factories: empty and the *_like family ------------------------------

_LIKE = {
    "zeros_like": lambda lib, t, **k: lib.zeros_like(t, **k),
    "ones_like": lambda lib, t, **k: lib.ones_like(t, **k),
    "full_like": lambda lib, t, **k: lib.full_like(t, 2.5, **k),
    "empty_like": lambda lib, t, **k: lib.empty_like(t, **k),
    "rand_like": lambda lib, t, **k: lib.rand_like(t, **k),
    "randn_like": lambda lib, t, **k: lib.randn_like(t, **k),
    "randint_like": lambda lib, t, **k: lib.randint_like(t, 5, **k),
}
_FORMATS = ("channels_last", "channels_last_3d", "contiguous_format", "preserve_format")


@pytest.mark.parametrize("factory", sorted(_LIKE))
@pytest.mark.parametrize("fmt", _FORMATS)
@pytest.mark.parametrize("shape,input_format", [((2, 3, 5, 7), None), ((2, 3, 5), None),
                                                ((2, 3, 5, 7), "channels_last"),
                                                ((2, 3, 4, 5, 6), None)])
def test_like_factories_lay_out_as_memory_format_names(factory, fmt, shape, input_format):
    # the strides were always row-major: .stride(), .dim_order() and .view() differed silently
    def run(lib):
        t = lib.arange(float(np.prod(shape))).reshape(shape)
        if input_format:
            t = t.contiguous(memory_format=getattr(lib, input_format))
        def call():
            r = _LIKE[factory](lib, t, memory_format=getattr(lib, fmt))
            values = r.tolist() if factory in ("zeros_like", "ones_like", "full_like") else None
            return r.stride(), tuple(r.shape), r.dtype is t.dtype, values
        return _outcome(call)
    assert run(tg) == run(torch)


@pytest.mark.parametrize("fmt", _FORMATS)
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (2, 3, 5), (2, 3, 4, 5, 6), (1, 3, 1, 1)])
def test_empty_lays_out_as_memory_format_names(fmt, shape):
    def run(lib):
        return _outcome(lambda: lib.empty(shape, memory_format=getattr(lib, fmt)).stride())
    assert run(tg) == run(torch)


def test_empty_channels_last_dim_order_and_requires_grad():
    # the docstring example of Tensor.dim_order
    for lib in (tg, torch):
        t = lib.empty((2, 3, 5, 7), memory_format=lib.channels_last, requires_grad=True)
        assert t.dim_order() == (0, 2, 3, 1)
        assert t.stride() == (105, 1, 21, 3) and t.requires_grad and t.is_leaf


def test_memory_format_must_be_a_memory_format():
    for fn in (lambda lib: lib.empty(2, 3, memory_format="channels_last"),
               lambda lib: lib.zeros_like(lib.ones(2, 3), memory_format=1)):
        got, want = _outcome(lambda: fn(tg)), _outcome(lambda: fn(torch))
        assert got[0] == want[0] == "TypeError"
        assert "memory_format" in got[1]


# -- post-accumulate-grad hooks: returning the tensor itself is allowed ------------------------

def test_post_accumulate_grad_hook_may_return_the_tensor():
    # Tensor.register_post_accumulate_grad_hook's docstring example: an in-place optimizer step
    # `lambda p: p.add_(p.grad, alpha=-lr)` returns p
    def run(lib):
        v = lib.tensor([0., 0., 0.], requires_grad=True)
        h = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-0.01))
        v.backward(lib.tensor([1., 2., 3.]))
        h.remove()
        return v.detach().tolist(), v.grad.tolist()
    assert run(tg) == run(torch)


@pytest.mark.parametrize("hook", [lambda p: p * 1, lambda p: p.detach(), lambda p: 5,
                                  lambda p: "a", lambda p: [p]])
def test_post_accumulate_grad_hook_other_results_refused_as_torch(hook):
    def run(lib):
        v = lib.tensor([0., 0., 0.], requires_grad=True)
        v.register_post_accumulate_grad_hook(hook)
        return _outcome(lambda: v.backward(lib.tensor([1., 2., 3.])))
    assert run(tg) == run(torch)


# -- typename names our classes by PyTorch's module path ---------------------------------------

@pytest.mark.parametrize("make", [lambda lib: lib.nn.Parameter, lambda lib: lib.nn.Linear(2, 2),
                                  lambda lib: lib.zeros(2), lambda lib: lib.Size([2]),
                                  lambda lib: 3, lambda lib: lib.nn.Linear])
def test_typename_matches_torch(make):
    assert tg.typename(make(tg)) == torch.typename(make(torch))


# -- meta tensors: no values to copy out, any source to copy in --------------------------------

@pytest.mark.parametrize("op", ["copy_", "setitem", "setitem_part"])
def test_copying_out_of_a_meta_tensor_is_refused(op):
    # tapegrad wrote the meta stand-in's zeros into the CPU tensor (SILENT)
    def run(lib):
        c, m = lib.ones(3), lib.empty(3, device="meta")
        if op == "copy_":
            out = _outcome(lambda: c.copy_(m))
        elif op == "setitem":
            out = _outcome(lambda: c.__setitem__(slice(None), m))
        else:
            out = _outcome(lambda: c.__setitem__(slice(0, 2), m[:2]))
        return out if isinstance(out, tuple) else None, c.tolist()
    assert run(tg) == run(torch)


@pytest.mark.parametrize("source", [lambda lib: lib.ones(3), lambda lib: lib.ones(1),
                                    lambda lib: lib.ones(3, dtype=lib.int64),
                                    lambda lib: lib.ones(2, 3)])
def test_copying_into_a_meta_tensor_from_cpu(source):
    def run(lib):
        m = lib.empty(3, device="meta")
        def call():
            r = m.copy_(source(lib))
            return str(r.device), tuple(r.shape), str(r.dtype)
        return _outcome(call)
    got, want = run(tg), run(torch)
    assert got == want


def test_skip_init_then_filled_in_place():
    # nn.utils.skip_init's docstring example, with the parameters then written from CPU values
    for lib in (tg, torch):
        m = lib.nn.utils.skip_init(lib.nn.Linear, 5, 1)
        assert tuple(m.weight.shape) == (1, 5) and m.weight.requires_grad
        meta = lib.nn.Linear(5, 1, device="meta")
        with lib.no_grad():
            meta.weight.copy_(lib.ones(1, 5))
        assert str(meta.weight.device) == "meta"


# -- Tensor.dim_order: PyTorch's order and ambiguity rules -------------------------------------

def _dim_order_cases(lib):
    cl = lib.channels_last
    yield lib.empty((1, 2, 3, 4))
    yield lib.empty((2, 3, 5, 7)).transpose(1, 2)
    yield lib.empty((2, 3, 1, 1), memory_format=cl)
    yield lib.empty((2, 3, 5, 7), memory_format=cl)
    yield lib.zeros(3).expand(2, 3)
    yield lib.zeros(3, 1).expand(3, 4)
    yield lib.empty(2, 3).t()
    yield lib.tensor(2.0)
    yield lib.empty(5)
    yield lib.empty(125).as_strided((2, 3, 2), (2, 5, 2))
    yield lib.empty(125).as_strided((3, 3), (1, 1))
    yield lib.empty(4, 1, 3).permute(2, 1, 0)
    yield lib.empty(2, 3, 4)[:, ::2, :].permute(1, 2, 0)


@pytest.mark.parametrize("check", ["false", "true", "both", "cl", "cf", "empty"])
def test_dim_order_matches_torch(check):
    # the docstring's list form raised for torch.empty((1, 2, 3, 4)), and a broadcast dim was
    # ordered outermost
    def run(lib):
        ac = {"false": False, "true": True, "both": [lib.contiguous_format, lib.channels_last],
              "cl": [lib.channels_last], "cf": [lib.contiguous_format], "empty": []}[check]
        return [_outcome(lambda: t.dim_order(ambiguity_check=ac)) for t in _dim_order_cases(lib)]
    assert run(tg) == run(torch)


@pytest.mark.parametrize("bad", ["ILLEGAL", (1,), [1], None])
def test_dim_order_refuses_other_checks(bad):
    got = _outcome(lambda: tg.empty(2, 3).dim_order(ambiguity_check=bad))
    want = _outcome(lambda: torch.empty(2, 3).dim_order(ambiguity_check=bad))
    assert got == want


# -- torch.testing.assert_close: which pairs compare -------------------------------------------

_CLOSE_PAIRS = {
    "array-tensor": lambda lib: (np.ones(2), lib.ones(2)),
    "tensor-array": lambda lib: (lib.ones(2), np.ones(2)),
    "in-sequences": lambda lib: ([lib.ones(1)], [np.ones(1)]),
    "arrays": lambda lib: (np.ones(2, np.float32), np.ones(2)),
    "np-float64-float": lambda lib: (np.float64(1.0), 1.0),
    "np-float32s": lambda lib: (np.float32(1.0), np.float32(1.0)),
    "np-int-float": lambda lib: (np.int64(1), 1.0),
    "np-float-far": lambda lib: (np.float64(2.0), 1.0),
    "nones": lambda lib: (None, None),
    "none-int": lambda lib: (None, 1),
    "parameter-tensor": lambda lib: (lib.nn.Parameter(lib.ones(2)), lib.ones(2)),
}


@pytest.mark.parametrize("pair", sorted(_CLOSE_PAIRS))
@pytest.mark.parametrize("allow_subclasses", [True, False])
def test_assert_close_pairs_as_torch(pair, allow_subclasses):
    # torch.testing.assert_close's docstring example: a numpy array against a tensor is a
    # TypeError, which tapegrad compared (and passed)
    def run(lib):
        actual, expected = _CLOSE_PAIRS[pair](lib)
        out = _outcome(lambda: lib.testing.assert_close(actual, expected,
                                                        allow_subclasses=allow_subclasses))
        return out if isinstance(out, tuple) else "ok"
    got, want = run(tg), run(torch)
    assert got[0] == want[0] if isinstance(want, tuple) else got == want
    if isinstance(want, tuple):
        assert got[1].split()[:3] == want[1].split()[:3]


def test_multi_grad_hook_handle_repr_names_torch():
    a = tg.ones(2, requires_grad=True)
    handle = tg.autograd.graph.register_multi_grad_hook((a,), lambda grads: None)
    assert repr(handle).startswith("<torch.autograd.graph._MultiHandle object at 0x")


# -- distributions.Poisson samples through torch.poisson ---------------------------------------

@pytest.mark.parametrize("rate", [[4], [True], [4.0], [[1.0, 2.0]]])
@pytest.mark.parametrize("sample_shape", [(), (2,), (3, 1)])
def test_poisson_distribution_sample_as_torch(rate, sample_shape):
    # Poisson's docstring example, Poisson(torch.tensor([4])).sample(), is PyTorch's
    # NotImplementedError for integer rates; tapegrad drew int64 counts
    def run(lib):
        dist = lib.distributions.Poisson(lib.tensor(rate))
        def call():
            s = dist.sample(sample_shape)
            return str(s.dtype), tuple(s.shape), s.requires_grad, bool((s >= 0).all())
        return _outcome(call)
    assert run(tg) == run(torch)


# -- iterating a tensor is unbind(0), as in PyTorch -------------------------------------------

def test_iteration_rows_are_unbind_outputs():
    # torch.autograd.functional.jvp's docstring output iterated: the rows print
    # grad_fn=<UnbindBackward0> in PyTorch (tapegrad's were SelectBackward0)
    for lib in (tg, torch):
        y = lib.ones(3, 2, requires_grad=True) * 2
        assert [type(r.grad_fn).__name__ for r in y] == ["UnbindBackward0"] * 3


def test_iteration_row_written_in_place_is_refused_as_torch():
    # tapegrad wrote a row of a tracked non-leaf through to y; PyTorch refuses writes into the
    # outputs of a multi-output view op
    def run(lib):
        y = lib.ones(3, 2, requires_grad=True) * 2
        rows = list(y)
        return _outcome(lambda: rows[0].add_(1))[0], y.detach().tolist()
    assert run(tg) == run(torch)


def test_iteration_gradient_and_untracked_writes():
    def run(lib):
        w = lib.ones(3, 2, requires_grad=True)
        sum(r.sum() * (i + 1) for i, r in enumerate(w * 2)).backward()
        x = lib.arange(6.0).reshape(3, 2)
        for r in x:
            r += 1
        return w.grad.tolist(), x.tolist()
    assert run(tg) == run(torch)


# -- pooling a non-tensor: PyTorch's argument-parser TypeError naming the builtin ---------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.max_pool1d([1.0], 2),
    lambda lib: lib.nn.functional.max_pool1d([1.0], 2, return_indices=True),
    lambda lib: lib.nn.functional.max_pool2d([1.0], 2),
    lambda lib: lib.nn.functional.max_pool2d([1.0], 2, return_indices=True),
    lambda lib: lib.nn.MaxPool2d(2, return_indices=True)(lib.randn),
    lambda lib: lib.nn.functional.max_pool3d([1.0], 2),
    lambda lib: lib.nn.functional.avg_pool1d([1.0], 2),
    lambda lib: lib.nn.functional.avg_pool2d(3, 2),
    lambda lib: lib.nn.AvgPool3d(2)([1.0]),
    lambda lib: lib.nn.functional.adaptive_avg_pool1d([1.0], 2),
    lambda lib: lib.nn.functional.adaptive_max_pool1d([1.0], 2, return_indices=True),
])
def test_pooling_a_non_tensor_names_the_builtin(call):
    # MaxUnpool2d's docstring example (with `input` the Python builtin): tapegrad said
    # "input must be a Tensor, not ..."
    got, want = _outcome(lambda: call(tg)), _outcome(lambda: call(torch))
    assert got[0] == want[0] == "TypeError"
    assert got[1].split()[:6] == want[1].split()[:6]
