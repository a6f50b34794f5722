"""torch-level forms of the functional ops (torch.conv2d, torch.kl_div, torch.feature_dropout,
...): ATen's calling conventions over the one implementation in tapegrad.nn.functional."""
import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)


def _randn(*shape):
    return rng.standard_normal(shape)


# (name, positional args as numpy arrays or plain values): ATen's argument order
CASES = [
    ("conv1d", (_randn(2, 3, 8), _randn(4, 3, 3), _randn(4), 1, 1)),
    ("conv2d", (_randn(2, 3, 6, 6), _randn(4, 3, 3, 3), None, 2)),
    ("conv_transpose1d", (_randn(2, 3, 8), _randn(3, 4, 3))),
    ("conv_transpose2d", (_randn(2, 3, 5, 5), _randn(3, 4, 3, 3), None, 2, 1, 1)),
    ("conv3d", (_randn(1, 2, 4, 5, 4), _randn(3, 2, 2, 3, 2), _randn(3), 1, 1)),
    ("conv_transpose3d", (_randn(1, 2, 3, 3, 3), _randn(2, 3, 2, 2, 2), None, 2)),
    ("max_pool3d", (_randn(1, 2, 4, 4, 4), 2)),
    ("rms_norm", (_randn(3, 4, 5), (5,), _randn(5))),
    ("ctc_loss", (np.log(rng.dirichlet(np.ones(5), size=(6, 2))), np.array([[1, 2], [3, 3]]),
                  [6, 6], [2, 2], 0, 0)),
    ("ctc_loss", (np.log(rng.dirichlet(np.ones(5), size=(6, 2))), np.array([[1, 2], [3, 3]]),
                  [6, 5], [2, 1], 0, 2)),
    ("max_pool1d", (_randn(2, 3, 8), 2)),
    ("max_pool2d", (_randn(2, 3, 8, 8), 2, [], 1)),
    ("max_pool1d_with_indices", (_randn(2, 3, 8), 3)),
    ("avg_pool1d", (_randn(2, 3, 8), 3, 2, 1)),
    ("adaptive_avg_pool1d", (_randn(2, 3, 8), 3)),
    ("adaptive_max_pool1d", (_randn(2, 3, 8), 3)),
    ("batch_norm", (_randn(4, 3), _randn(3), _randn(3), None, None, True, 0.1, 1e-5, False)),
    ("instance_norm", (_randn(4, 3, 5), _randn(3), _randn(3), None, None, True, 0.1, 1e-5,
                       False)),
    ("group_norm", (_randn(4, 6, 5), 3, _randn(6), _randn(6))),
    ("cosine_similarity", (_randn(4, 6), _randn(4, 6))),
    ("pairwise_distance", (_randn(4, 6), _randn(4, 6))),
    ("pdist", (_randn(5, 3),)),
    ("pdist", (_randn(5, 3), 1.5)),
    ("pdist", (_randn(5, 3), float("inf"))),
    ("kl_div", (_randn(4, 5), np.abs(_randn(4, 5)))),
    ("kl_div", (_randn(4, 5), np.abs(_randn(4, 5)), 1)),
    ("kl_div", (_randn(4, 5), _randn(4, 5), 2)),
    ("bilinear", (_randn(4, 3), _randn(4, 5), _randn(2, 3, 5), _randn(2))),
    ("pixel_shuffle", (_randn(1, 8, 2, 2), 2)),
    ("pixel_unshuffle", (_randn(1, 2, 4, 4), 2)),
    ("channel_shuffle", (_randn(1, 6, 2, 2), 3)),
    ("prelu", (_randn(2, 3, 4), np.array([0.25, 0.1, 0.3]))),
    ("selu", (_randn(3, 4),)),
    ("celu", (_randn(3, 4), 0.5)),
    ("threshold", (_randn(3, 4), 0.1, 20.0)),
    ("hardshrink", (_randn(3, 4), 0.3)),
    ("rrelu", (_randn(3, 4),)),
    ("binary_cross_entropy_with_logits", (_randn(3, 4), rng.random((3, 4)))),
    ("binary_cross_entropy_with_logits", (_randn(3, 4), rng.random((3, 4)), None, None, 2)),
    ("poisson_nll_loss", (_randn(3, 4), np.abs(_randn(3, 4)), True, False, 1e-8, 1)),
    ("poisson_nll_loss", (np.abs(_randn(3, 4)), np.abs(_randn(3, 4)), False, True, 1e-8, 0)),
    ("margin_ranking_loss", (_randn(5), _randn(5), np.sign(_randn(5)), 0.1)),
    ("hinge_embedding_loss", (_randn(5, 2), np.sign(_randn(5, 2)), 0.5, 2)),
    ("cosine_embedding_loss", (_randn(5, 3), _randn(5, 3), np.sign(_randn(5)), 0.1, 1)),
    ("triplet_margin_loss", (_randn(5, 3), _randn(5, 3), _randn(5, 3))),
    ("triplet_margin_loss", (_randn(5, 3), _randn(5, 3), _randn(5, 3), 1.0, 2.0, 1e-6, True, 1)),
]


def _args(lib, args):
    # float arrays are differentiable inputs, except targets the op cannot differentiate
    return [lib.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
            for a in args]


@pytest.mark.parametrize("name,args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(torch, name, args):
    theirs, ours = _args(torch, args), _args(tg, args)
    expected, got = getattr(torch, name)(*theirs), getattr(tg, name)(*ours)
    if isinstance(expected, tuple):     # (values, indices): indices equal, values below
        np.testing.assert_array_equal(got[1].numpy(), expected[1].numpy())
        assert got[1].dtype == tg.int64
        expected, got = expected[0], got[0]
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-6)
    expected.sum().backward()
    got.sum().backward()
    for a, b in zip(theirs, ours):
        if isinstance(a, torch.Tensor) and a.grad is not None:
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), atol=1e-6)


def test_unreduced_by_default_as_torch_python_binding(torch):
    # The schema says reduction=1, torch's Python binding reduces nothing unless told
    x, t = _randn(4, 5), rng.random((4, 5))
    assert tuple(torch.kl_div(torch.tensor(x), torch.tensor(t)).shape) == (4, 5)
    assert tuple(tg.kl_div(tg.tensor(x), tg.tensor(t)).shape) == (4, 5)


def test_reduction_values_without_torch():
    x = tg.tensor([[0.0, 1.0], [2.0, -1.0]])
    target = tg.tensor([[1.0, 1.0], [-1.0, 1.0]])
    none = tg.hinge_embedding_loss(x, target, 1.0)
    np.testing.assert_allclose(none.numpy(), [[0.0, 1.0], [0.0, -1.0]])
    assert tg.hinge_embedding_loss(x, target, 1.0, 1).item() == 0.0
    assert tg.hinge_embedding_loss(x, target, 1.0, 2).item() == 0.0
    assert tuple(tg.hinge_embedding_loss(x, target, 1.0, 7).shape) == (2, 2)   # ATen: none
    with pytest.raises(TypeError, match="argument 'reduction' .* must be int, not str"):
        tg.kl_div(x, x, "mean")


def test_pdist_values_and_gradient(gradcheck):
    points = tg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    d = tg.pdist(points)
    np.testing.assert_allclose(d.detach().numpy(), [5.0, 0.0, 5.0])
    d.sum().backward()      # coincident rows 0 and 2 contribute no gradient, as PyTorch
    np.testing.assert_allclose(points.grad.numpy(), [[-0.6, -0.8], [1.2, 1.6], [-0.6, -0.8]])
    np.testing.assert_allclose(tg.pdist(points, 1).detach().numpy(), [7.0, 0.0, 7.0])
    assert tuple(tg.pdist(tg.ones(1, 3)).shape) == (0,)
    gradcheck(lambda x: tg.pdist(x, 3.0), _randn(4, 3))
    gradcheck(lambda x: tg.pdist(x), _randn(4, 3))


@pytest.mark.parametrize("args,match", [
    ((tg.ones(3, 2, 2),), "pdist only supports 2D tensors, got: 3D"),
    ((tg.ones(3, 2), -1.0), "pdist only supports non-negative p values"),
    ((tg.ones(3, 2, dtype=tg.int64),), "pdist only supports floating-point dtypes"),
])
def test_pdist_errors(args, match):
    with pytest.raises(RuntimeError, match=match):
        tg.pdist(*args)


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout",
                                  "feature_alpha_dropout", "dropout_", "feature_dropout_"])
def test_dropout_family_checks(name):
    fn = getattr(tg, name)
    # ATen checks p even when not training, and raises RuntimeError (F raises ValueError)
    with pytest.raises(RuntimeError, match="has to be between 0 and 1, but got 1.5"):
        fn(tg.ones(3, 4), 1.5, False)
    x = tg.ones(3)
    assert fn(x, 0.5, False) is x
    if "feature" in name:
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            fn(x, 0.5, True)
    with pytest.raises(TypeError, match="train"):
        fn(x, 0.5)


def test_feature_dropout_masks_whole_channels():
    tg.manual_seed(0)
    y = tg.feature_dropout(tg.ones(50, 40, 6), 0.25, True)
    values = y.numpy()
    assert set(np.unique(values)) <= {0.0, np.float32(4.0 / 3.0)}
    assert (values == values[:, :, :1]).all()            # one draw per (sample, channel)
    assert 0.15 < (values[:, :, 0] == 0).mean() < 0.35
    z = tg.feature_alpha_dropout(tg.randn(4000, 10, 3), 0.3, True)
    assert abs(z.mean().item()) < 0.05 and abs(z.std().item() - 1) < 0.05
    np.testing.assert_array_equal(tg.feature_dropout(tg.ones(2, 3, 2), 1.0, True).numpy(), 0)


def test_in_place_forms():
    x = tg.ones(3, 4)
    assert tg.dropout_(x, 0.5, True) is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}
    leaf = tg.ones(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tg.feature_alpha_dropout_(leaf, 0.5, True)
    y = tg.tensor([-1.0, 0.5, 2.0])
    assert tg.threshold_(y, 1.0, 9.0) is y
    np.testing.assert_array_equal(y.numpy(), [9.0, 9.0, 2.0])


def test_pool_signatures_as_aten(torch):
    with pytest.raises(TypeError, match="return_indices"):
        torch.max_pool1d(torch.ones(1, 1, 4), 2, return_indices=True)
    with pytest.raises(TypeError, match="return_indices"):
        tg.max_pool1d(tg.ones(1, 1, 4), 2, return_indices=True)
    values, indices = tg.adaptive_max_pool1d(tg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    np.testing.assert_array_equal(values.numpy(), [[[3.0, 2.0]]])
    np.testing.assert_array_equal(indices.numpy(), [[[1, 2]]])


CELL_CASES = [
    ("rnn_tanh_cell", (_randn(4, 3), _randn(4, 5), _randn(5, 3), _randn(5, 5), _randn(5),
                       _randn(5))),
    ("rnn_relu_cell", (_randn(4, 3), _randn(4, 5), _randn(5, 3), _randn(5, 5))),
    ("gru_cell", (_randn(4, 3), _randn(4, 5), _randn(15, 3), _randn(15, 5), _randn(15),
                  _randn(15))),
    ("constant_pad_nd", (_randn(2, 3), [1, 2], 0.5)),
    ("constant_pad_nd", (_randn(2, 3), [-1, 1, 1, 0])),
]


@pytest.mark.parametrize("name,args", CELL_CASES, ids=[c[0] for c in CELL_CASES])
def test_cells_and_padding_match_torch(torch, name, args):
    test_matches_torch(torch, name, args)


def test_lstm_cell_matches_torch(torch):
    arrays = (_randn(4, 3), _randn(4, 5), _randn(4, 5), _randn(20, 3), _randn(20, 5), _randn(20),
              _randn(20))
    theirs, ours = _args(torch, arrays), _args(tg, arrays)
    h_t, c_t = torch.lstm_cell(theirs[0], [theirs[1], theirs[2]], *theirs[3:])
    h_g, c_g = tg.lstm_cell(ours[0], [ours[1], ours[2]], *ours[3:])
    np.testing.assert_allclose(h_g.detach().numpy(), h_t.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(c_g.detach().numpy(), c_t.detach().numpy(), rtol=1e-10)
    (h_t.sum() + 2 * c_t.sum()).backward()
    (h_g.sum() + 2 * c_g.sum()).backward()
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_cell_checks_and_embedding_renorm():
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.gru_cell(tg.ones(3), tg.ones(5), tg.ones(15, 3), tg.ones(15, 5))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4 expected 3"):
        tg.rnn_tanh_cell(tg.ones(4, 4), tg.ones(4, 5), tg.ones(5, 3), tg.ones(5, 5))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 6, "
                                           "expected 5"):
        tg.rnn_tanh_cell(tg.ones(4, 3), tg.ones(4, 6), tg.ones(5, 3), tg.ones(5, 5))
    weight = tg.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    assert tg.embedding_renorm_(weight, tg.tensor([0, 1, 1]), 1.0, 2.0) is weight
    np.testing.assert_allclose(weight.numpy(), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-6)
