"""Session 18 breadth: the top-level `*_copy` functions (one generic definition over the views)."""
import numpy as np
import pytest

import tapegrad
import tapegrad as tg

CASES = [
    ("view_copy", (2, 3), ((3, 2),), {}),
    ("permute_copy", (2, 3, 4), ((2, 0, 1),), {}),
    ("transpose_copy", (2, 3), (0, 1), {}),
    ("t_copy", (2, 3), (), {}),
    ("expand_copy", (1, 3), ((2, 2, 3),), {}),
    ("squeeze_copy", (1, 2, 1), (), {}),
    ("unsqueeze_copy", (2, 3), (1,), {}),
    ("select_copy", (2, 3), (1, 2), {}),
    ("slice_copy", (4, 5), (1, 1, 4, 2), {}),
    ("diagonal_copy", (3, 4), (), {"offset": 1}),
    ("alias_copy", (2, 3), (), {}),
    ("unbind_copy", (3, 2), (1,), {}),
    ("split_copy", (5, 2), (2,), {}),
    ("split_with_sizes_copy", (5, 2), ([2, 3],), {}),
    ("unfold_copy", (2, 6), (1, 3, 2), {}),
    ("as_strided_copy", (3, 4), ((2, 2), (1, 2), 1), {}),
]


def _as_tuple(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


@pytest.mark.parametrize("name,shape,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_copy_variant_parity(torch, name, shape, args, kwargs):
    data = np.random.default_rng(0).standard_normal(shape)
    x = tapegrad.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    ours = _as_tuple(getattr(tapegrad, name)(x, *args, **kwargs))
    theirs = _as_tuple(getattr(torch, name)(tx, *args, **kwargs))
    assert len(ours) == len(theirs)
    weights = [np.random.default_rng(i + 1).standard_normal(tuple(t.shape)) for i, t in enumerate(theirs)]
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        assert o.stride() == t.stride()          # a contiguous copy, not a view
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy())
    sum(((o * tapegrad.tensor(w)).sum() for o, w in zip(ours, weights)), tapegrad.tensor(0.0)).backward()
    sum(((t * torch.tensor(w)).sum() for t, w in zip(theirs, weights)), torch.tensor(0.0)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_copy_variant_is_a_copy():
    x = tapegrad.zeros(2, 3)
    y = tapegrad.transpose_copy(x, 0, 1)
    y.fill_(1.0)
    assert float(x.sum()) == 0.0


def test_detach_copy_and_out(torch):
    x = tapegrad.randn(2, 3, requires_grad=True)
    d = tapegrad.detach_copy(x)
    # (PyTorch's result requires grad, with no derivative: tests/test_fuzz_triage19.py)
    assert d.requires_grad == torch.detach_copy(torch.ones(1, requires_grad=True)).requires_grad
    assert d.data_ptr() != x.data_ptr()
    out = tapegrad.empty(0)
    r = tapegrad.t_copy(x.detach(), out=out)
    assert r is out and tuple(out.shape) == (3, 2)
    np.testing.assert_allclose(out.numpy(), x.detach().numpy().T)


def test_copy_variant_gradcheck(gradcheck):
    x = np.random.default_rng(3).standard_normal((3, 4))
    gradcheck(lambda t: tapegrad.diagonal_copy(t, 1) * tapegrad.diagonal_copy(t, 1), x)
    gradcheck(lambda t: tapegrad.unbind_copy(t, 1)[2] ** 3, x)


def test_view_as_real_copy(torch):
    data = np.array([1 + 2j, 3 - 1j])
    ours = tapegrad.view_as_real_copy(tapegrad.tensor(data))
    theirs = torch.view_as_real_copy(torch.tensor(data))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    back = tapegrad.view_as_complex_copy(ours)
    np.testing.assert_allclose(back.numpy(), data)


@pytest.mark.parametrize("nshape,affine", [((4,), False), ((3, 4), True)])
def test_native_layer_norm_parity(torch, nshape, affine):
    data = np.random.default_rng(5).standard_normal((2, 3, 4))
    w = np.random.default_rng(6).standard_normal(nshape) if affine else None
    x, tx = tapegrad.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    ours = tapegrad.native_layer_norm(x, list(nshape), None if w is None else tapegrad.tensor(w),
                                      None, 1e-5)
    theirs = torch.native_layer_norm(tx, list(nshape), None if w is None else torch.tensor(w),
                                     None, 1e-5)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape) and o.requires_grad == t.requires_grad
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-8)
    (ours[0] ** 3).sum().backward()
    (theirs[0] ** 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_native_dropout():
    x = tapegrad.ones(1000, requires_grad=True)
    out, mask = tapegrad.native_dropout(x, 0.25, True)
    assert mask.dtype == tapegrad.bool and not mask.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), mask.numpy() / 0.75)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() / 0.75)
    out, mask = tapegrad.native_dropout(x, 0.25, False)
    assert bool(mask.all()) and np.array_equal(out.detach().numpy(), x.detach().numpy())


@pytest.mark.parametrize("call", ["x.cumsum('a')", "x.sort('a')", "x.flip('a')", "x.roll('a')",
                                  "x.roll(True)", "x.cumsum(1.5)", "torch.cumsum(x, 'a')"])
def test_non_integer_dim_is_type_error(torch, call):
    """A str/float dim was int()'s ValueError; PyTorch raises TypeError "must be ... int"."""
    for lib in (torch, tapegrad):
        x = lib.zeros(2, 3)
        with pytest.raises(TypeError, match=None if "sort" in call else "must be (tuple of )?int"):
            eval(call, {"x": x, "torch": lib})


# -- a 0-d integer tensor where an int goes; fill_ of a non-number ------------------------------

@pytest.mark.parametrize("call", ["x.roll(T.tensor(1))", "x.flip(T.tensor(0))",
                                  "x.roll(T.tensor(1), T.tensor(1))", "T.roll(x, T.tensor(1), 0)",
                                  "x.flip(T.tensor(0), T.tensor(1))"])
def test_zero_d_int_tensor_as_an_int(torch, call):
    got = eval(call, {"T": tg, "x": tg.arange(6.).reshape(2, 3)})
    want = eval(call, {"T": torch, "x": torch.arange(6.).reshape(2, 3)})
    assert got.tolist() == want.tolist()


def test_flip_function_refuses_a_single_dim_as_pytorch():
    with pytest.raises(TypeError, match=r"flip\(\): argument 'dims' \(position 2\) must be tuple "
                                        r"of ints, not Tensor"):
        tg.flip(tg.arange(3.), tg.tensor(0))


@pytest.mark.parametrize("value", ["a", None, [1]])
def test_fill_of_a_non_number_is_a_type_error(value):
    with pytest.raises(TypeError, match=r"fill_\(\) received an invalid combination of arguments"):
        tg.zeros(2).fill_(value)


def test_rnn_dropout_warning_shown_once_like_pytorch():
    """PyTorch attributes the warning to its own rnn.py, so two layers built on two lines of a
    script warn once under the default filter; tapegrad pointed at the script's lines (twice)."""
    import subprocess
    import sys
    code = ("import tapegrad.nn as nn\n"
            "a = nn.RNN(4, 3, dropout=0.5)\n"
            "b = nn.RNN(4, 3, dropout=0.5)\n")
    err = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                         text=True, check=True).stderr
    assert err.count("dropout option adds dropout") == 1
