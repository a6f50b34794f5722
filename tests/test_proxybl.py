"""Differentiable-physics proxy (session 34, proxybl): gaps found running MD / spring / PDE /
Monte Carlo scripts unchanged: functorch's deprecation warning for vmap, randint's argument
binding and messages (Monte Carlo site picks), and the type name PyTorch's messages give a dtype."""
import warnings

import numpy as np

import pytest

import tapegrad
from tapegrad import _functorch

torch = pytest.importorskip("torch")
functorch = pytest.importorskip("functorch")


def _warning_text(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]


def test_functorch_vmap_deprecation_names_torch_vmap():
    # functorch.vmap's FutureWarning points to torch.vmap; the other transforms' to torch.func.<name>
    def calls(mod, T):
        return (lambda: mod.vmap(T.sin)(T.ones(2)),
                lambda: mod.jacrev(lambda x: T.sin(x).sum())(T.ones(2)))
    for ours_call, theirs_call, replacement in zip(calls(_functorch, tapegrad),
                                                   calls(functorch, torch),
                                                   ("`torch.vmap`", "`torch.func.jacrev`")):
        ours, theirs = _warning_text(ours_call), _warning_text(theirs_call)
        assert ours == theirs and len(ours) == 1
        assert replacement in ours[0]


RANDINT_CASES = {
    "three_ints": ((0, 4, 2), {}),
    "high_only": ((4,), {}),
    "four_positional": ((0, 4, (2,), 3), {}),
    "float_high_positional": ((2.5, (3,)), {}),
    "size_keyword_int": ((0, 4), {"size": 2}),
    "float_high_three": ((0, 4.5, (2,)), {}),
    "low_twice": ((0, 4, (2,)), {"low": 1}),
    "generator_not_generator": ((4, (2,)), {"generator": 3}),
    "size_none_three": ((0, 4, None), {}),
    "size_keyword_float_element": ((4,), {"size": (2.5,)}),
    "float_first_element_three": ((0, 3, (2.0,)), {}),
    "dtype_in_got": ((0, 4, 2), {"dtype": "float32"}),
}


@pytest.mark.parametrize("case", sorted(RANDINT_CASES))
def test_randint_bad_calls_get_pytorchs_typeerror(case):
    args, kwargs = RANDINT_CASES[case]

    def call(T):
        kw = {k: getattr(T, v) if k == "dtype" else v for k, v in kwargs.items()}
        return T.randint(*args, **kw)
    with pytest.raises(TypeError) as expected:
        call(torch)
    with pytest.raises(TypeError) as got:
        call(tapegrad)
    # the first line: the overload list that follows is the same text on both sides
    assert str(got.value).splitlines()[0] == str(expected.value).splitlines()[0]
    assert str(got.value) == str(expected.value)


def test_randint_takes_one_element_int_tensor_bounds():
    # PyTorch's parser takes a one-element integer tensor as an int (an L read from a shape)
    L = tapegrad.tensor(5)
    r = tapegrad.randint(L, (50,))
    t = torch.randint(torch.tensor(5), (50,))
    assert r.dtype == tapegrad.int64 and t.dtype == torch.int64
    assert 0 <= r.min().item() and r.max().item() < 5
    assert tapegrad.randint(tapegrad.tensor([3]), tapegrad.tensor(4), (3,)).tolist() == [3] * 3
    assert tapegrad.randint(low=2, high=3, size=(5,)).tolist() == [2] * 5
    assert tapegrad.randint(2, 3, size=(2,)).tolist() == [2, 2]
    assert tapegrad.randint(high=3, size=(4,)).shape == (4,)
    # a float tensor is not an int, in both
    with pytest.raises(TypeError, match="argument 'high' \\(position 1\\) must be int, not Tensor"):
        tapegrad.randint(tapegrad.tensor(5.0), (2,))
    with pytest.raises(TypeError, match="argument 'high' \\(position 1\\) must be int, not Tensor"):
        torch.randint(torch.tensor(5.0), (2,))


def test_dtype_type_name_in_messages_is_torch_dtype():
    # a dtype passed where a size goes: PyTorch's message prints its type as torch.dtype
    for fn in (lambda T: T.zeros(T.float32), lambda T: T.ones(2, T.float64)):
        with pytest.raises(TypeError) as expected:
            fn(torch)
        with pytest.raises(TypeError) as got:
            fn(tapegrad)
        assert str(got.value) == str(expected.value)
        assert "torch.dtype" in str(got.value)
    assert tapegrad._core.type_name(tapegrad.float16) == "torch.dtype"


# -- multinomial without replacement: PyTorch's topk of w / Exp(1) -------------------------------

@pytest.mark.parametrize("weights,k", [([0., 1., 0.], 2), ([0., 1., 0., 0., 2.], 4),
                                       ([[0., 1., 0.], [1., 0., 0.]], 3),
                                       ([[0.5, 0., 0., 0.25, 0., 0.]], 6)])
def test_multinomial_fills_with_zero_weights_in_pytorchs_order(weights, k):
    # once the positive weights are exhausted, the zero-weight categories come in the order
    # topk leaves its ties in -- the same every time, not at random
    ours = tapegrad.tensor(weights)
    theirs = torch.tensor(weights)
    positive = (theirs > 0).sum(-1, keepdim=True)
    for seed in range(6):
        tapegrad.manual_seed(seed)
        torch.manual_seed(seed)
        a = tapegrad.multinomial(ours, k)
        b = torch.multinomial(theirs, k)
        assert a.dtype == tapegrad.int64 and tuple(a.shape) == tuple(b.shape)
        np_a, np_b = a.numpy(), b.numpy()
        # the random part: the positive categories, in some order, first
        for row_a, row_b, npos in zip(np_a.reshape(-1, k), np_b.reshape(-1, k), positive.flatten()):
            assert sorted(row_a[:npos]) == sorted(row_b[:npos])
            assert list(row_a[npos:]) == list(row_b[npos:])


def test_multinomial_without_replacement_frequencies():
    tapegrad.manual_seed(0)
    w = tapegrad.tensor([1., 2., 3., 0.])
    first = tapegrad.stack([tapegrad.multinomial(w, 2) for _ in range(3000)])
    freq = np.bincount(first[:, 0].numpy(), minlength=4) / 3000
    np.testing.assert_allclose(freq, [1 / 6, 2 / 6, 3 / 6, 0], atol=0.03)
    assert (first[:, 0] != first[:, 1]).all()
    assert (first != 3).all()          # the zero weight is never drawn while others remain
    one = tapegrad.stack([tapegrad.multinomial(w, 1) for _ in range(3000)]).flatten()
    np.testing.assert_allclose(np.bincount(one.numpy(), minlength=4) / 3000,
                               [1 / 6, 2 / 6, 3 / 6, 0], atol=0.03)
    # P(second | first): the draw is sequential in proportion to the remaining weights
    second_given_2 = first[first[:, 0] == 2][:, 1].numpy()
    np.testing.assert_allclose(np.bincount(second_given_2, minlength=4) / len(second_given_2),
                               [1 / 3, 2 / 3, 0, 0], atol=0.05)
    # and past the positive weights the zero ones follow in topk's order, every time
    assert all(tapegrad.multinomial(tapegrad.tensor([0., 1., 0.]), 2).tolist() == [1, 0]
               for _ in range(50))
