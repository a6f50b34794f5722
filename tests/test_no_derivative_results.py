"""Results of ops PyTorch gives no derivative (unique, unique_consecutive, histogram,
histogramdd, bincount's weights): from an input requiring grad they require grad themselves and
raise PyTorch's error only at backward.  tapegrad's results did not require grad (SILENT: a
script testing ``requires_grad`` took the other branch, and backward named the wrong cause)."""
import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _x(lib):
    return lib.tensor([[3., 1.5], [-3., 2.], [3., 1.5]], requires_grad=True)


CASES = {
    "unique": lambda lib, x: lib.unique(x),
    "unique_sorted_false": lambda lib, x: lib.unique(x, sorted=False),
    "unique_dim": lambda lib, x: lib.unique(x, dim=0),
    "unique_inverse": lambda lib, x: x.unique(return_inverse=True, return_counts=True)[0],
    "unique_consecutive": lambda lib, x: lib.unique_consecutive(x),
    "unique_consecutive_dim": lambda lib, x: x.unique_consecutive(return_counts=True, dim=0)[0],
    "histogram": lambda lib, x: lib.histogram(x, bins=3).hist,
    "histogram_edges": lambda lib, x: x.histogram(3).bin_edges,
    "histogram_given_edges": lambda lib, x: lib.histogram(x, bins=lib.tensor([0., 1., 4.]))[0],
    "histogram_weight": lambda lib, x: lib.histogram(x.detach()[:, 0], bins=2, weight=x[:, 1])[0],
    "histogramdd": lambda lib, x: lib.histogramdd(x, bins=2).hist,
    "histogramdd_edges": lambda lib, x: lib.histogramdd(x, bins=[2, 3]).bin_edges[1],
    "histogramdd_given_edges": lambda lib, x: lib.histogramdd(
        x, bins=[lib.tensor([0., 1., 4.])] * 2).hist,
    "histogramdd_given_edges_out": lambda lib, x: lib.histogramdd(
        x, bins=[lib.tensor([0., 1., 4.])] * 2).bin_edges[0],
    "bincount_weights": lambda lib, x: lib.bincount(lib.tensor([0, 2, 2]), weights=x[:, 0]),
}


def _outcome(lib, name):
    x = _x(lib)
    result = CASES[name](lib, x)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result.sum().backward()
        failure = None
    except (RuntimeError, NotImplementedError) as e:
        failure = (type(e).__name__, str(e).split("\n")[0])
    with lib.no_grad():
        under_no_grad = CASES[name](lib, x).requires_grad
    return result.requires_grad, result.is_leaf, result.tolist(), failure, under_no_grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_result_requires_grad_and_backward_raises_as_pytorch(name):
    assert _outcome(tg, name) == _outcome(torch, name)
