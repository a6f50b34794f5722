"""Proxy task proxybf (time-series forecasting and anomaly detection scripts): where PyTorch's
deprecation warnings point.  PyTorch raises the `weight_norm` FutureWarning and the legacy
`size_average` / `reduce` UserWarning of the loss modules from inside its own files, so under the
default warning filter a script building many weight-normed TCN layers, or several losses with
`reduce=False`, prints each warning once; pointing at the caller's line printed it once per line."""
import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _caught(fn, action="always"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        fn()
    return caught


def _two_tcn_convs(lib):
    # two call lines, as a TemporalBlock's conv1 and conv2
    lib.nn.utils.weight_norm(lib.nn.Conv1d(3, 4, 2, padding=1, dilation=1))
    lib.nn.utils.weight_norm(lib.nn.Conv1d(4, 4, 2, padding=1, dilation=1))


@pytest.mark.parametrize("lib", [torch, tg], ids=["torch", "tapegrad"])
def test_weight_norm_warning_is_raised_inside_the_library(lib):
    caught = _caught(lambda: _two_tcn_convs(lib))
    assert [w.category for w in caught] == [FutureWarning, FutureWarning]
    assert "`torch.nn.utils.weight_norm` is deprecated" in str(caught[0].message)
    assert all(w.filename != __file__ for w in caught)
    assert all(w.filename.endswith("weight_norm.py") for w in caught)


@pytest.mark.parametrize("lib", [torch, tg], ids=["torch", "tapegrad"])
def test_weight_norm_warning_prints_once_under_the_default_filter(lib):
    caught = _caught(lambda: _two_tcn_convs(lib), action="default")
    assert len(caught) == 1


@pytest.mark.parametrize("lib", [torch, tg], ids=["torch", "tapegrad"])
def test_legacy_reduce_flag_warning_of_loss_modules_is_raised_inside_the_library(lib):
    caught = _caught(lambda: (lib.nn.MSELoss(reduce=False), lib.nn.L1Loss(size_average=False)))
    assert [w.category for w in caught] == [UserWarning, UserWarning]
    assert "reduction='none' instead" in str(caught[0].message)
    assert all(w.filename != __file__ for w in caught)
    # Anomaly Transformer's `nn.MSELoss(reduce=False)`: same values as reduction='none'
    a = lib.tensor([[1.0, 2.0], [3.0, 5.0]])
    b = lib.tensor([[0.5, 2.0], [1.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = lib.nn.MSELoss(reduce=False)(a, b)
    assert got.tolist() == [[0.25, 0.0], [4.0, 16.0]]


@pytest.mark.parametrize("lib", [torch, tg], ids=["torch", "tapegrad"])
def test_legacy_reduce_flag_warning_prints_once_per_message_under_the_default_filter(lib):
    caught = _caught(lambda: (lib.nn.MSELoss(reduce=False), lib.nn.MSELoss(reduce=False),
                              lib.nn.L1Loss(reduce=False)), action="default")
    assert len(caught) == 1
