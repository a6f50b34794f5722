"""Gaps found running held-out generative-model tutorials (explainingai-code/VAE-Pytorch,
tonyduan/normalizing-flows, LuChang-CS/WGAN-GP-PyTorch, faisalqureshi/ddpm-mnist) and probing
their idioms under tapegrad: what they compute must be what PyTorch computes."""
import numpy as np
import pytest

import tapegrad

_RNG = np.random.RandomState(0)
_A = [_RNG.randn(2, 3), _RNG.randn(4)]
_B = [_RNG.randn(2, 3), _RNG.randn(4)]
_C = [_RNG.rand(2, 3) + 0.5, _RNG.rand(4) + 0.5]

# torch._foreach_* (the EMA helpers' `_foreach_lerp_(ema, params, 1 - decay)`, multi-tensor
# optimizers): every argument form (scalar, scalar list, tensor list, one tensor) and variant.
_FOREACH_CASES = {
    "mul_scalar": lambda L, a, b, c: L._foreach_mul(a, 2.5),
    "mul_list": lambda L, a, b, c: L._foreach_mul(a, b),
    "mul_scalar_list": lambda L, a, b, c: L._foreach_mul(a, [2, 3.]),
    "mul_tensor": lambda L, a, b, c: L._foreach_mul(a, L.tensor(3.)),
    "mul_": lambda L, a, b, c: L._foreach_mul_(a, 0.5),
    "add_alpha": lambda L, a, b, c: L._foreach_add(a, b, alpha=-2),
    "add_": lambda L, a, b, c: L._foreach_add_(a, b, alpha=0.1),
    "add_tuple_": lambda L, a, b, c: L._foreach_add_(tuple(a), 1),
    "sub_scalar": lambda L, a, b, c: L._foreach_sub(a, 1),
    "div_list": lambda L, a, b, c: L._foreach_div(a, c),
    "div_": lambda L, a, b, c: L._foreach_div_(a, [2., 4.]),
    "maximum_scalar": lambda L, a, b, c: L._foreach_maximum(a, 0.),
    "minimum_list": lambda L, a, b, c: L._foreach_minimum(a, b),
    "maximum_": lambda L, a, b, c: L._foreach_maximum_(a, b),
    "clamp_min": lambda L, a, b, c: L._foreach_clamp_min(a, -0.2),
    "clamp_max_": lambda L, a, b, c: L._foreach_clamp_max_(a, [0.1, 0.2]),
    "pow": lambda L, a, b, c: L._foreach_pow(c, 2),
    "pow_list": lambda L, a, b, c: L._foreach_pow(c, b),
    "scalar_pow": lambda L, a, b, c: L._foreach_pow(2., a),
    "lerp": lambda L, a, b, c: L._foreach_lerp(a, b, 0.3),
    "lerp_": lambda L, a, b, c: L._foreach_lerp_(a, b, 0.001),
    "lerp_tensors": lambda L, a, b, c: L._foreach_lerp(a, b, c),
    "lerp_scalar_list": lambda L, a, b, c: L._foreach_lerp(a, b, [0.1, 0.9]),
    "addcmul": lambda L, a, b, c: L._foreach_addcmul(a, b, c, 0.5),
    "addcdiv_": lambda L, a, b, c: L._foreach_addcdiv_(a, b, c, [1., -2.]),
    "addcdiv_tensor": lambda L, a, b, c: L._foreach_addcdiv(a, b, c, L.tensor([1., -2.])),
    "sqrt": lambda L, a, b, c: L._foreach_sqrt(c),
    "sqrt_": lambda L, a, b, c: L._foreach_sqrt_(c),
    "neg_": lambda L, a, b, c: L._foreach_neg_(a),
    "exp": lambda L, a, b, c: L._foreach_exp(a),
    "sign": lambda L, a, b, c: L._foreach_sign(a),
    "norm": lambda L, a, b, c: L._foreach_norm(a),
    "norm_1": lambda L, a, b, c: L._foreach_norm(a, 1),
    "norm_inf": lambda L, a, b, c: L._foreach_norm(a, float("inf")),
    "norm_dtype": lambda L, a, b, c: L._foreach_norm(a, 2, dtype=L.float64),
    "powsum": lambda L, a, b, c: L._foreach_powsum(a, 3),
    "max": lambda L, a, b, c: L._foreach_max(a),
    "clone": lambda L, a, b, c: L._foreach_clone(a),
    "copy_": lambda L, a, b, c: L._foreach_copy_(a, b),
    "zero_": lambda L, a, b, c: L._foreach_zero_(a),
    "long_plus_float": lambda L, a, b, c: L._foreach_add([L.tensor([1, 2])], 2.5),
    "long_sqrt": lambda L, a, b, c: L._foreach_sqrt([L.tensor([1, 4])]),
    "in_place_on_leaf_under_no_grad": lambda L, a, b, c: _under_no_grad(
        L, lambda: L._foreach_lerp_([x.requires_grad_() for x in a], b, 0.5)),
}

_FOREACH_ERRORS = {
    "long_times_float_in_place": lambda L, a, b, c: L._foreach_mul_([L.tensor([1, 2])], 1.5),
    "long_norm": lambda L, a, b, c: L._foreach_norm([L.tensor([1, 4])]),
    "lengths": lambda L, a, b, c: L._foreach_add(a, b[:1]),
    "scalar_list_length": lambda L, a, b, c: L._foreach_mul(a, [1.]),
    "empty": lambda L, a, b, c: L._foreach_add([], 1),
    "not_a_list": lambda L, a, b, c: L._foreach_mul(a[0], 2),
    "not_a_scalar": lambda L, a, b, c: L._foreach_mul(a, "x"),
    "shapes": lambda L, a, b, c: L._foreach_add(a, b[::-1]),
    "max_of_empty": lambda L, a, b, c: L._foreach_max([L.tensor([])]),
    "leaf_in_place": lambda L, a, b, c: L._foreach_mul_([x.requires_grad_() for x in a], 2.),
}


def _under_no_grad(lib, fn):
    with lib.no_grad():
        return fn()


def _inputs(lib):
    return [[lib.tensor(x, dtype=lib.float32) for x in arrays] for arrays in (_A, _B, _C)]


def _outcome(lib, fn):
    a, b, c = _inputs(lib)
    result = fn(lib, a, b, c)
    # An in-place variant hands back the very list it was given.
    kind = "self" if result is a or result is c else type(result).__name__
    return kind, [(str(t.dtype), t.detach().numpy()) for t in result]


@pytest.mark.parametrize("case", sorted(_FOREACH_CASES))
def test_foreach_matches_torch(torch, case):
    want_kind, want = _outcome(torch, _FOREACH_CASES[case])
    got_kind, got = _outcome(tapegrad, _FOREACH_CASES[case])
    assert got_kind == want_kind
    assert [d for d, _ in got] == [d for d, _ in want]
    for (_, g), (_, w) in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(_FOREACH_ERRORS))
def test_foreach_errors_match_torch(torch, case):
    with pytest.raises(Exception) as want:
        _FOREACH_ERRORS[case](torch, *_inputs(torch))
    with pytest.raises(type(want.value)) as got:
        _FOREACH_ERRORS[case](tapegrad, *_inputs(tapegrad))
    # The key phrase: the message up to PyTorch's list of signatures.
    assert str(want.value).split(", but expected")[0] in str(got.value)


_FOREACH_GRADS = {
    "addcmul": lambda L, a, b: L._foreach_addcmul(a, a, b, 2.),
    "lerp": lambda L, a, b: L._foreach_lerp(a, b, 0.3),
    "lerp_tensors": lambda L, a, b: L._foreach_lerp(a, b, a),
    "norm": lambda L, a, b: L._foreach_norm(a),
    "mul": lambda L, a, b: L._foreach_mul(a, b),
    "add_alpha": lambda L, a, b: L._foreach_add(a, b, alpha=2),
    "maximum": lambda L, a, b: L._foreach_maximum(a, b),
    "div": lambda L, a, b: L._foreach_div(a, b),
}


@pytest.mark.parametrize("case", sorted(_FOREACH_GRADS))
def test_foreach_gradients_match_torch(torch, case):
    def grads(lib):
        leaves = [lib.tensor(x, dtype=lib.float64, requires_grad=True) for x in _A + _B]
        outs = _FOREACH_GRADS[case](lib, leaves[:2], leaves[2:])
        lib.autograd.backward([o.sum() for o in outs])
        return [None if x.grad is None else x.grad.numpy() for x in leaves]
    for g, w in zip(grads(tapegrad), grads(torch)):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_foreach_ema_update_matches_step_by_step():
    # The EMA idiom: ema <- decay * ema + (1 - decay) * param, in place, without a torch oracle.
    ema = [tapegrad.tensor(x) for x in _A]
    params = [tapegrad.tensor(x) for x in _B]
    with tapegrad.no_grad():
        assert tapegrad._foreach_lerp_(ema, params, 0.1) is ema
    for e, a, b in zip(ema, _A, _B):
        np.testing.assert_allclose(e.numpy(), a + 0.1 * (b - a), rtol=1e-12)


# PyTorch lists a refused call's keywords last-given first in "got (...)".
_KEYWORD_ORDER_CALLS = {
    "std": lambda L, x: L.std(x, keepdim=3, dim="a", correction="b"),
    "std_method": lambda L, x: x.std(correction="b", keepdim=3, dim="a"),
    "clamp": lambda L, x: L.clamp(x, min=L.zeros(1), max=0.5),
    "clamp_method": lambda L, x: x.clamp(min="a", max="b"),
    "mean": lambda L, x: L.mean(x, dtype="a", dim="b"),
    "tensor_split": lambda L, x: L.tensor_split(x, sections=1.5, dim="a"),
}


@pytest.mark.parametrize("case", sorted(_KEYWORD_ORDER_CALLS))
def test_invalid_combination_lists_keywords_as_torch(torch, case):
    with pytest.raises(TypeError) as want:
        _KEYWORD_ORDER_CALLS[case](torch, torch.ones(2))
    with pytest.raises(TypeError) as got:
        _KEYWORD_ORDER_CALLS[case](tapegrad, tapegrad.ones(2))
    assert str(got.value).split(", but expected")[0] == str(want.value).split(", but expected")[0]


# A float (or bool) where a convolution or pool takes integer sizes: PyTorch refuses it
# (TypeError); tapegrad truncated it with int() and silently computed another operation
# (stride=1.5 ran with stride 1, padding=(k - 1) / 2 from Python 2 code ran).
_FLOAT_SIZE_CALLS = {
    "conv2d_stride": lambda L, F, x: F.conv2d(x, L.ones(3, 2, 3, 3), stride=1.5),
    "conv2d_stride_whole_float": lambda L, F, x: F.conv2d(x, L.ones(3, 2, 3, 3), stride=2.0),
    "conv2d_padding_pair": lambda L, F, x: F.conv2d(x, L.ones(3, 2, 3, 3), padding=(1, 1.0)),
    "conv2d_stride_bool": lambda L, F, x: F.conv2d(x, L.ones(3, 2, 3, 3), stride=True),
    "Conv2d_padding": lambda L, F, x: L.nn.Conv2d(2, 3, 3, padding=(3 - 1) / 2)(x),
    "Conv2d_stride": lambda L, F, x: L.nn.Conv2d(2, 3, 3, stride=2.0)(x),
    "ConvTranspose2d_stride": lambda L, F, x: L.nn.ConvTranspose2d(2, 3, 3, stride=2.0)(x),
    "conv1d_dilation": lambda L, F, x: F.conv1d(x[0], L.ones(3, 2, 3), dilation=1.5),
    "max_pool2d_kernel": lambda L, F, x: F.max_pool2d(x, 2.0),
    "MaxPool2d_kernel": lambda L, F, x: L.nn.MaxPool2d(2.0)(x),
    "avg_pool2d_stride": lambda L, F, x: F.avg_pool2d(x, 2, stride=1.5),
    "adaptive_avg_pool2d_size": lambda L, F, x: F.adaptive_avg_pool2d(x, (2.5, 2)),
}


@pytest.mark.parametrize("case", sorted(_FLOAT_SIZE_CALLS))
def test_float_sizes_refused_as_torch(torch, case):
    call = _FLOAT_SIZE_CALLS[case]
    with pytest.raises(TypeError):
        call(torch, torch.nn.functional, torch.ones(1, 2, 6, 6))
    with pytest.raises(TypeError, match="must be tuple of ints"):
        call(tapegrad, tapegrad.nn.functional, tapegrad.ones(1, 2, 6, 6))


def test_integer_like_sizes_still_accepted(torch):
    # numpy integers and integer tensors are integers to PyTorch's parser.
    def shapes(lib):
        F, x, w = lib.nn.functional, lib.ones(1, 2, 6, 6), lib.ones(3, 2, 3, 3)
        return [tuple(F.conv2d(x, w, stride=np.int64(2)).shape),
                tuple(F.conv2d(x, w, padding=lib.tensor(1)).shape),
                tuple(F.max_pool2d(x, (2,)).shape),
                tuple(F.adaptive_avg_pool2d(x, (None, 3)).shape)]
    assert shapes(tapegrad) == shapes(torch)


# constraints.X.check(value) is PyTorch's bool tensor (one entry per event); tapegrad returned a
# numpy array or a Python bool, which printed differently and broke torch.all(check(...)).
_CONSTRAINT_CHECKS = {
    "simplex": lambda C, L: C.simplex.check(L.tensor([[0.2, 0.8], [0.5, 0.6]])),
    "simplex_one_event": lambda C, L: C.simplex.check(L.tensor([0.3, 0.7])),
    "positive": lambda C, L: C.positive.check(L.tensor([[1., -1.], [0., 2.]])),
    "unit_interval": lambda C, L: C.unit_interval.check(L.tensor([0.5, 1.5])),
    "integer_interval": lambda C, L: C.integer_interval(0, 3).check(L.tensor([1., 1.5, 4.])),
    "independent": lambda C, L: C.independent(C.real, 1).check(L.tensor([[1., float("nan")]])),
    "positive_definite": lambda C, L: C.positive_definite.check(L.tensor([[2., 0.5], [0.5, 1.]])),
    "lower_cholesky": lambda C, L: C.lower_cholesky.check(L.eye(2).expand(3, 2, 2)),
    "boolean": lambda C, L: C.boolean.check(L.tensor([0., 1., 2.])),
}


@pytest.mark.parametrize("case", sorted(_CONSTRAINT_CHECKS))
def test_constraint_check_is_a_bool_tensor_as_torch(torch, case):
    want = _CONSTRAINT_CHECKS[case](torch.distributions.constraints, torch)
    got = _CONSTRAINT_CHECKS[case](tapegrad.distributions.constraints, tapegrad)
    assert isinstance(got, tapegrad.Tensor)
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()
    assert bool(tapegrad.all(got)) == bool(torch.all(want))


def test_script_constraint_subclass_still_validates():
    # A script's own Constraint defines check (returning a tensor); validation reads it.
    class Even(tapegrad.distributions.constraints.Constraint):
        def check(self, value):
            return value % 2 == 0

    class EvenNormal(tapegrad.distributions.Normal):
        arg_constraints = {"loc": Even(), "scale": tapegrad.distributions.constraints.positive}

    EvenNormal(tapegrad.tensor([2.]), tapegrad.tensor([1.]), validate_args=True)
    with pytest.raises(ValueError, match="loc"):
        EvenNormal(tapegrad.tensor([3.]), tapegrad.tensor([1.]), validate_args=True)


# Int-only arguments of the nn ops: PyTorch refuses a float, bool or string (TypeError); tapegrad
# converted them with int() and computed (ignore_index=1.5 ignored class 1, num_classes="3").
_INT_ONLY_CALLS = {
    "cross_entropy_ignore_index": lambda L, F: F.cross_entropy(L.zeros(3, 4), L.tensor([0, 1, 2]),
                                                              ignore_index=1.5),
    "cross_entropy_ignore_index_bool": lambda L, F: F.cross_entropy(
        L.zeros(3, 4), L.tensor([0, 1, 2]), ignore_index=True),
    "nll_loss_ignore_index": lambda L, F: F.nll_loss(L.zeros(3, 4), L.tensor([0, 1, 2]),
                                                     ignore_index=2.0),
    "embedding_padding_idx": lambda L, F: F.embedding(L.tensor([0, 1]), L.ones(5, 2),
                                                      padding_idx=1.5),
    "one_hot_float": lambda L, F: F.one_hot(L.tensor([1]), 3.0),
    "one_hot_str": lambda L, F: F.one_hot(L.tensor([1]), "3"),
    "one_hot_bool": lambda L, F: F.one_hot(L.tensor([1]), True),
}


@pytest.mark.parametrize("case", sorted(_INT_ONLY_CALLS))
def test_int_only_arguments_refused_as_torch(torch, case):
    with pytest.raises(TypeError) as want:
        _INT_ONLY_CALLS[case](torch, torch.nn.functional)
    with pytest.raises(TypeError) as got:
        _INT_ONLY_CALLS[case](tapegrad, tapegrad.nn.functional)
    assert "must be int, not" in str(got.value)
    assert str(want.value).split("(): ")[1] == str(got.value).split("(): ")[1]


def test_int_like_arguments_still_accepted(torch):
    def values(lib):
        F = lib.nn.functional
        return [F.one_hot(lib.tensor([1]), np.int64(3)).tolist(),
                F.one_hot(lib.tensor([1]), lib.tensor(3)).tolist(),
                round(F.cross_entropy(lib.ones(3, 4), lib.tensor([0, 1, 2]),
                                      ignore_index=np.int64(1)).item(), 6)]
    assert values(tapegrad) == values(torch)


@pytest.mark.parametrize("call", [lambda L: L.diag(L.ones(3), 1.0), lambda L: L.diag(L.ones(2, 2), 0.5),
                                  lambda L: L.kthvalue(L.arange(4.), 2.0),
                                  lambda L: L.arange(4.).kthvalue(True)],
                         ids=["diag_embed", "diag_take", "kthvalue", "kthvalue_bool"])
def test_int_only_torch_functions_refuse_floats_as_torch(torch, call):
    with pytest.raises(TypeError) as want:
        call(torch)
    with pytest.raises(TypeError) as got:
        call(tapegrad)
    assert "must be int, not" in str(got.value)
    assert str(want.value).split("): ")[-1] == str(got.value).split("): ")[-1]
