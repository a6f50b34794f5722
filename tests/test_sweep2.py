"""Regressions found by differential sweeps of argument forms against PyTorch (sweep2)."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

INTS = np.array([[-3, 0, 2, 7], [4, -1, 9, 1]])


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
@pytest.mark.parametrize("call", [
    lambda F, nn, x: F.relu6(x),
    lambda F, nn, x: nn.ReLU6()(x),
    lambda F, nn, x: F.hardtanh(x, -0.5, 2.5),
    lambda F, nn, x: nn.Hardtanh(-0.9, 6.5)(x),
    lambda F, nn, x: F.hardtanh(x.clone(), 0.0, 2.0, inplace=True),
])
def test_hardtanh_of_integers_keeps_the_dtype_and_truncates_the_limits(dtype, call):
    # SILENT before: float limits promoted an integer input to float32 and clamped to -0.5, 2.5
    expected = call(TF, torch.nn, torch.tensor(INTS.astype(dtype)))
    got = call(F, tg.nn, tg.tensor(INTS.astype(dtype)))
    assert str(got.dtype) == str(expected.dtype)
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("dtype, limits, error", [
    ("uint8", (-1.0, 2.0), RuntimeError),   # negative limit on an unsigned type
    ("uint8", (-1, 2), RuntimeError),       # (it used to wrap to 255 and clamp everything to 2)
    ("uint8", (0, 300), RuntimeError),      # limit out of the type's range
    ("int8", (-200.0, 2.0), RuntimeError),
    ("bool", (0.0, 1.0), RuntimeError),
    ("int64", (3.7, 2.0), ValueError),      # min_val > max_val
    ("float32", (1.0, 0.0), ValueError),
])
def test_hardtanh_limits_torch_rejects(dtype, limits, error):
    with pytest.raises(error):
        TF.hardtanh(torch.tensor(INTS.astype(dtype)), *limits)
    with pytest.raises(error):
        F.hardtanh(tg.tensor(INTS.astype(dtype)), *limits)


def test_hardtanh_of_uint8_with_a_limit_that_truncates_to_zero():
    x = INTS.astype("uint8")
    assert F.hardtanh(tg.tensor(x), -0.9, 2.0).tolist() == TF.hardtanh(torch.tensor(x), -0.9, 2.0).tolist()


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
@pytest.mark.parametrize("call", [
    lambda F, x: F.hardsigmoid(x), lambda F, x: F.hardswish(x), lambda F, x: F.celu(x),
    lambda F, x: F.mish(x), lambda F, x: F.logsigmoid(x), lambda F, x: F.hardshrink(x),
    lambda F, x: F.softshrink(x), lambda F, x: F.glu(x),
])
def test_float_only_activations_reject_integers(dtype, call):
    # before: computed in float32 (hardshrink: in the integer type) where PyTorch raises
    with pytest.raises(NotImplementedError):
        call(TF, torch.tensor(INTS.astype(dtype)))
    with pytest.raises(NotImplementedError, match="not implemented for"):
        call(F, tg.tensor(INTS.astype(dtype)))


def test_threshold_of_bool_raises_and_of_ints_computes():
    with pytest.raises(NotImplementedError):
        TF.threshold(torch.tensor(INTS > 0), 0, 1)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        F.threshold(tg.tensor(INTS > 0), 0, 1)
    assert F.threshold(tg.tensor(INTS), 1, 9).tolist() == TF.threshold(torch.tensor(INTS), 1, 9).tolist()


@pytest.mark.parametrize("x_dtype, w_dtype, error", [
    ("float32", "float64", RuntimeError), ("float64", "float32", RuntimeError),
    ("int64", "int64", NotImplementedError)])
def test_prelu_does_not_promote(x_dtype, w_dtype, error):
    # SILENT before: a float32 input with a float64 weight gave float32, PyTorch raises
    x = INTS.astype(x_dtype)
    w = np.array([0.25]).astype(w_dtype)
    with pytest.raises(error):
        TF.prelu(torch.tensor(x), torch.tensor(w))
    with pytest.raises(error):
        F.prelu(tg.tensor(x), tg.tensor(w))


_NORM_X = np.random.default_rng(2).standard_normal((2, 4, 3, 3))
_NORM_P = np.linspace(0.5, 2.0, 4)


def _norm_call(lib, name, x_dtype, w_dtype=None, b_dtype=None, r_dtype=None):
    fn = lib.nn.functional

    def t(a, d):
        return None if d is None else lib.tensor(a, dtype=getattr(lib, d))
    x = t(_NORM_X, x_dtype)
    w, b = t(_NORM_P, w_dtype), t(-_NORM_P, b_dtype)
    rm, rv = t(_NORM_P - 1, r_dtype or x_dtype), t(_NORM_P, r_dtype or x_dtype)
    if name == "layer_norm":
        return fn.layer_norm(x.transpose(1, 3), (4,), w, b)
    if name == "group_norm":
        return fn.group_norm(x, 2, w, b)
    if name == "batch_norm eval":
        return fn.batch_norm(x, rm, rv, w, b, training=False)
    if name == "batch_norm train":
        return fn.batch_norm(x, rm, rv, w, b, training=True)
    if name == "instance_norm eval":
        return fn.instance_norm(x, rm, rv, w, b, use_input_stats=False)
    return fn.instance_norm(x, None, None, w, b)


_NORMS = ["layer_norm", "group_norm", "batch_norm eval", "batch_norm train", "instance_norm eval",
          "instance_norm"]


@pytest.mark.parametrize("name", _NORMS)
@pytest.mark.parametrize("dtypes", [
    ("float32", "float64", "float64", None), ("float32", None, "float64", None),
    ("float64", "float32", "float32", None), ("float32", "float32", "float64", None),
    ("float16", "float64", None, None), ("float32", "int64", None, None),
    ("float64", "float32", None, "float64"), ("float64", None, None, "float32"),
])
def test_normalisations_do_not_promote_parameters(name, dtypes):
    # SILENT before: group_norm(float32, float64 weight) gave float64, batch_norm and
    # instance_norm computed with parameters of any dtype; PyTorch raises
    try:
        expected = _norm_call(torch, name, *dtypes)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            _norm_call(tg, name, *dtypes)
        # the key phrase, wherever PyTorch's message is its kernel's mixed-dtype check
        assert str(e).split(":")[-1].strip()[:20] in str(got.value)
    else:
        got = _norm_call(tg, name, *dtypes)
        assert str(got.dtype) == str(expected.dtype)
        np.testing.assert_allclose(got.double().numpy(), expected.double().numpy(), atol=1e-5)


@pytest.mark.parametrize("name", _NORMS)
@pytest.mark.parametrize("dtypes", [("float16", "float32", "float32", "float32"),
                                    ("float16", "float32", None, None),
                                    ("float16", None, None, "float32")])
def test_float16_input_with_float32_parameters_stays_float16(name, dtypes):
    # PyTorch's mixed form (group_norm gave float32, layer_norm raised)
    try:
        expected = _norm_call(torch, name, *dtypes)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            _norm_call(tg, name, *dtypes)
        return
    got = _norm_call(tg, name, *dtypes)
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(got.double().numpy(), expected.double().numpy(), atol=2e-2)


def test_layer_norm_mixed_float16_gradients_keep_float32_parameters():
    x = np.random.default_rng(0).standard_normal((3, 5))
    grads = []
    for lib in (torch, tg):
        X = lib.tensor(x, dtype=lib.float16, requires_grad=True)
        W = lib.tensor(np.linspace(.5, 2, 5), dtype=lib.float32, requires_grad=True)
        lib.nn.functional.layer_norm(X, (5,), W).float().sum().backward()
        grads.append((str(X.grad.dtype), str(W.grad.dtype), W.grad.numpy()))
    assert grads[0][:2] == grads[1][:2] == ("torch.float16", "torch.float32")
    np.testing.assert_allclose(grads[1][2], grads[0][2], atol=2e-2)


@pytest.mark.parametrize("weight_dtype, psw_dtype", [
    ("float32", "float64"), ("float64", "float32"), ("int64", "float32"), ("float32", "int64")])
def test_embedding_bag_weight_dtypes_must_agree(weight_dtype, psw_dtype):
    # SILENT before: float32 weight with float64 per_sample_weights gave float64 bags
    def call(lib):
        return lib.nn.functional.embedding_bag(
            lib.tensor([[1, 2], [0, 3]]), lib.ones(4, 3, dtype=getattr(lib, weight_dtype)),
            per_sample_weights=lib.ones(2, 2, dtype=getattr(lib, psw_dtype)), mode="sum")
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(tg)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("q_dtype, mask_dtype", [
    ("float64", "float32"), ("float16", "float32"), ("float64", "float16"), ("float32", "float64"),
    ("float32", "int64")])
def test_sdpa_takes_a_float32_mask_for_any_query(q_dtype, mask_dtype):
    # PyTorch's "bool or float" means float32; the result keeps the query's dtype
    rng = np.random.default_rng(1)
    q, m = rng.standard_normal((2, 4, 3)), rng.standard_normal((4, 4))

    def call(lib):
        Q = lib.tensor(q, dtype=getattr(lib, q_dtype))
        return lib.nn.functional.scaled_dot_product_attention(
            Q, Q, Q, attn_mask=lib.tensor(m, dtype=getattr(lib, mask_dtype)))
    try:
        expected = call(torch)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="Expected attn_mask dtype"):
            call(tg)
        return
    got = call(tg)
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(got.double().numpy(), expected.double().numpy(), atol=1e-2)


@pytest.mark.parametrize("a, b", [("int64", "float32"), ("int64", "float64"), ("int64", "float16"),
                                  ("int64", "int64"), ("bool", "bool")])
def test_cosine_similarity_of_integers_takes_the_common_float_dtype(a, b):
    x, y = np.array([[1, 2, 3], [0, 1, 1]]), np.array([[2, 1, 3], [1, 1, 0]])

    def call(lib):
        return lib.nn.functional.cosine_similarity(lib.tensor(x).to(getattr(lib, a)),
                                                   lib.tensor(y).to(getattr(lib, b)))
    try:
        expected = call(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e)):
            call(tg)
        return
    got = call(tg)
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(got.double().numpy(), expected.double().numpy(), rtol=1e-3)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
def test_unfold_and_fold_dtypes(dtype):
    # before: integers were unfolded and folded (summed) where PyTorch raises; bool is allowed
    x = np.array([[[[1, 0, 1], [0, 0, 1]]]]).astype(dtype)
    for fn in (lambda lib, t: lib.nn.functional.unfold(t, 2),
               lambda lib, t: lib.nn.functional.fold(t[..., :2].reshape(1, 4, 1), (2, 2), 2)):
        try:
            expected = fn(torch, torch.tensor(x))
        except NotImplementedError:
            with pytest.raises(NotImplementedError, match="not implemented for"):
                fn(tg, tg.tensor(x))
            continue
        got = fn(tg, tg.tensor(x))
        assert str(got.dtype) == str(expected.dtype) and got.tolist() == expected.tolist()


_AA_X = np.random.default_rng(11).standard_normal((2, 2, 13, 9))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kw", [dict(size=(5, 4)), dict(size=(1, 1)), dict(size=(20, 17)),
                                dict(scale_factor=(0.5, 0.25)), dict(scale_factor=0.37,
                                                                     recompute_scale_factor=True),
                                dict(size=(4, 3), align_corners=True)])
def test_interpolate_antialias_matches_torch(mode, kw):
    # was NotImplementedError
    results = []
    for lib in (torch, tg):
        x = lib.tensor(_AA_X, requires_grad=True)
        y = lib.nn.functional.interpolate(x, mode=mode, antialias=True, **kw)
        weights = lib.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin()
        g, = lib.autograd.grad((y * weights).sum(), x)
        results.append((tuple(y.shape), y.detach().numpy(), g.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[1][1], results[0][1], atol=1e-12)
    np.testing.assert_allclose(results[1][2], results[0][2], atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias_finite_differences(gradcheck, mode):
    gradcheck(lambda x: tg.nn.functional.interpolate(x, size=(3, 4), mode=mode, antialias=True)
              * tg.arange(12.0).reshape(3, 4).cos(), _AA_X[:1, :1, :7, :9])


@pytest.mark.parametrize("call", [
    lambda F, lib: F.interpolate(lib.ones(1, 1, 4, 4), size=3.0),                  # float size
    lambda F, lib: F.interpolate(lib.ones(1, 1, 4, 4), size=(3, 2.0)),
    lambda F, lib: F.interpolate(lib.ones(1, 1, 4, 4), size=3, recompute_scale_factor=True),
    lambda F, lib: F.pad(lib.ones(1, 2, 3), (1, 1), mode="reflect", value=1.0),
    lambda F, lib: F.local_response_norm(lib.ones(1, 2, 3, 3), 0),
    lambda F, lib: F.local_response_norm(lib.ones(1, 2, 3), -1),
    lambda F, lib: F.unfold(lib.ones(1, 1, 2, 2, 2), 2),
    lambda F, lib: F.conv_transpose2d(lib.ones(1, 1, 3, 3), lib.ones(1, 1, 2, 2), padding="same"),
    # (int32 indices were read as indices; PyTorch refuses them)
    lambda F, lib: F.max_unpool1d(lib.ones(1, 1, 2), lib.zeros(1, 1, 2, dtype=lib.int32), 2),
])
def test_argument_errors_have_torch_types(call):
    with pytest.raises(Exception) as expected:
        call(TF, torch)
    with pytest.raises(Exception) as got:
        call(F, tg)
    assert type(got.value) is type(expected.value), (got.value, expected.value)


def test_interpolate_takes_integer_tensor_sizes():
    x = np.ones((1, 1, 4, 4))
    got = F.interpolate(tg.tensor(x), size=[tg.tensor(3), 2])
    assert tuple(got.shape) == tuple(TF.interpolate(torch.tensor(x), size=[torch.tensor(3), 2]).shape)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_shrink_negative_lambda(dtype):
    x = np.array([-2.0, 0.5, 0.0])
    # hardshrink keeps every value (it raised here); softshrink names the dtype's own range
    assert F.hardshrink(tg.tensor(x, dtype=getattr(tg, dtype)), -1.0).tolist() == \
        TF.hardshrink(torch.tensor(x, dtype=getattr(torch, dtype)), -1.0).tolist()
    with pytest.raises(RuntimeError) as expected:
        TF.softshrink(torch.tensor(x, dtype=getattr(torch, dtype)), -1.0)
    with pytest.raises(RuntimeError) as got:
        F.softshrink(tg.tensor(x, dtype=getattr(tg, dtype)), -1.0)
    assert str(got.value) == str(expected.value)
