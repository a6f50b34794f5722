"""Cases from a differential sweep of tapegrad.nn against the hand-written tests of PyTorch's
test/test_nn.py (module API, containers, losses, padding, interpolation, pooling); each one
failed before its fix and is checked against torch here."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(exception type name, message) of a call, or ('ok', None)."""
    try:
        fn()
    except Exception as e:      # noqa: BLE001 (the type is what is compared)
        return type(e).__name__, str(e)
    return "ok", None


def _same_outcome(make):
    """make(lib) runs under torch and tapegrad with the same exception type and message."""
    assert _outcome(lambda: make(tg)) == _outcome(lambda: make(torch))


# -- containers and Module ----------------------------------------------------------------------

@pytest.mark.parametrize("how", ["iadd", "extend"])
def test_parameter_list_refuses_a_single_parameter(how):
    # A Parameter iterates over its rows: it was silently appended as 2 new parameters.
    def make(lib):
        pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 2))])
        p = lib.nn.Parameter(lib.zeros(2, 2))
        if how == "iadd":
            pl += p
        else:
            pl.extend(p)
    _same_outcome(make)
    pl = tg.nn.ParameterList([tg.nn.Parameter(tg.ones(2, 2))])
    with pytest.raises(TypeError):
        pl.extend(tg.nn.Parameter(tg.zeros(2, 2)))
    assert len(pl) == 1


def test_module_containers_name_what_is_not_iterable():
    _same_outcome(lambda lib: lib.nn.ModuleList().extend(lib.nn.ReLU()))
    _same_outcome(lambda lib: lib.nn.ModuleDict().update(lib.nn.ReLU()))


def test_module_to_refuses_copy():
    _same_outcome(lambda lib: lib.nn.Linear(2, 2).to("cpu", copy=True))
    _same_outcome(lambda lib: lib.nn.Linear(2, 2).to(lib.float64, copy=False))


def test_buffer_assignment_through_an_old_style_register_buffer():
    # A subclass overriding register_buffer without `persistent` (test_buffer_bad_module_subclass)
    def make(lib, persistent):
        class OldStyle(lib.nn.Linear):
            def __init__(self):
                super().__init__(2, 2)
                self.bar = lib.nn.Buffer(lib.ones(2), persistent=persistent)

            def register_buffer(self, name, value):
                super().register_buffer(name, value, True)
        m = OldStyle()
        return sorted(m.state_dict()), m.bar.tolist()
    assert make(tg, True) == make(torch, True)
    _same_outcome(lambda lib: make(lib, False))


# -- padding, interpolation, pooling, affine_grid -----------------------------------------------

@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape, pad", [
    ((2, 0, 4), (1, 1)), ((2, 3, 0), (0, 0)), ((0, 4), (1, 1)), ((0, 3, 4), (1, 1)),
    ((1, 0, 3, 4), (1, 1, 1, 1)), ((0, 3, 4), (1, 1, 1, 1)), ((0, 2, 3, 4), (1, 1, 1, 1)),
    ((1, 2, 0, 3, 4), (1, 1, 1, 1, 1, 1)), ((2, 0, 3, 4), (1, 1, 1, 1, 1, 1))])
def test_edge_pad_of_empty_non_batch_dims(mode, shape, pad):
    # reflect/replicate padding returned an (empty) result where PyTorch's kernels raise; an
    # empty batch stays fine
    def make(lib):
        return lib.nn.functional.pad(lib.zeros(shape), pad, mode=mode).shape
    _same_outcome(make)
    if _outcome(lambda: make(torch))[0] == "ok":
        assert tuple(make(tg)) == tuple(make(torch))


def test_reflect_pad_argument_number():
    _same_outcome(lambda lib: lib.nn.functional.pad(lib.ones(1, 3, 3), (1, 1, 4, 0), "reflect"))
    _same_outcome(lambda lib: lib.nn.functional.pad(lib.ones(1, 1, 2, 2, 2), (0, 0, 0, 0, 2, 0),
                                                    "reflect"))


@pytest.mark.parametrize("shape, kwargs", [
    ((4,), dict(scale_factor=2)), ((1, 4), dict(scale_factor=2, mode="bilinear")),
    ((4,), dict(size=3)), ((1, 1, 4), dict(scale_factor=(2, 2))), ((1, 1, 4), dict(size=(2, 2)))])
def test_interpolate_unsupported_rank_error_type(shape, kwargs):
    # a 1-D input with a scalar scale_factor raised ValueError where PyTorch raises
    # NotImplementedError; a sequence of the wrong length stays a ValueError
    _same_outcome(lambda lib: lib.nn.functional.interpolate(lib.ones(shape), **kwargs))


@pytest.mark.parametrize("fn, shape", [("max_pool1d", (1, 1, 4)), ("avg_pool1d", (1, 1, 4)),
                                       ("max_pool2d", (1, 1, 4, 4)), ("avg_pool2d", (1, 1, 4, 4))])
@pytest.mark.parametrize("kwargs", [dict(stride=0), dict(padding=-1), dict(padding=-1,
                                                                            return_indices=True)])
def test_pool_argument_messages(fn, shape, kwargs):
    if "return_indices" in kwargs and fn.startswith("avg"):
        pytest.skip("avg pools have no indices")
    _same_outcome(lambda lib: getattr(lib.nn.functional, fn)(lib.ones(shape), 2, **kwargs))


def test_affine_grid_size_message():
    _same_outcome(lambda lib: lib.nn.functional.affine_grid(lib.zeros(2, 2, 3), [2, 3, 4],
                                                            align_corners=False))


# -- losses and norms: grad_fn names ------------------------------------------------------------

def _grad_fn_name(t):
    return type(t.grad_fn).__name__


def test_loss_grad_fn_names():
    def names(lib):
        F = lib.nn.functional
        x = lib.ones(3, 4, requires_grad=True)
        y = lib.ones(3, requires_grad=True)
        lp = lib.zeros(6, 2, 4).log_softmax(2).requires_grad_()
        return [_grad_fn_name(F.margin_ranking_loss(y, y * 2, lib.ones(3), reduction="none")),
                _grad_fn_name(F.triplet_margin_loss(x, x * 2, x * 3, reduction="none")),
                _grad_fn_name(F.ctc_loss(lp, lib.tensor([[1, 2], [3, 1]]), lib.tensor([6, 5]),
                                         lib.tensor([2, 2]), reduction="none",
                                         zero_infinity=True))]
    assert names(tg) == names(torch)


def test_margin_ranking_rank_error_message():
    _same_outcome(lambda lib: lib.nn.functional.margin_ranking_loss(
        lib.ones(3, 2), lib.ones(3, 2), lib.ones(3)))


def test_instance_norm_with_running_stats_in_eval():
    a = np.random.default_rng(0).standard_normal((2, 3, 4))
    outs = []
    for lib in (torch, tg):
        m = lib.nn.InstanceNorm1d(3, track_running_stats=True, affine=True).double()
        m(lib.tensor(a))
        m.eval()
        x = lib.tensor(a[::-1].copy(), requires_grad=True)
        out = m(x)
        out.pow(2).sum().backward()
        outs.append((_grad_fn_name(out), out.detach().numpy(), x.grad.numpy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[1][2], outs[0][2], rtol=1e-10, atol=1e-12)


def test_module_dict_update_sequence_element_errors():
    _same_outcome(lambda lib: lib.nn.ModuleDict().update([lib.nn.ReLU()]))
    _same_outcome(lambda lib: lib.nn.ModuleDict().update([[lib.nn.ReLU()]]))
    _same_outcome(lambda lib: lib.nn.ModuleDict().update([("a", lib.nn.ReLU(), 1)]))


@pytest.mark.parametrize("shape", [(1, 1, 4), (1, 4), (2, 3, 4), (3, 4)])
@pytest.mark.parametrize("fn, return_indices", [("avg_pool1d", None), ("max_pool1d", False),
                                                ("max_pool1d", True)])
def test_pool1d_output_too_small_message(shape, fn, return_indices):
    # the channel count came from the (N, C, 1, L) view's height: "(1x4)" for 3 channels
    kwargs = {} if return_indices is None else {"return_indices": return_indices}
    _same_outcome(lambda lib: getattr(lib.nn.functional, fn)(lib.ones(shape), 5, **kwargs))


def test_cosine_similarity_broadcast_error_message():
    _same_outcome(lambda lib: lib.nn.functional.cosine_similarity(lib.ones(2, 3), lib.ones(3, 2)))


@pytest.mark.parametrize("shape, scale_factor", [
    ((1, 1, 3, 4), (1.3, 1.0)), ((1, 1, 3, 4), 1.3), ((1, 2, 2, 3), (2.2, 1.1)),
    ((2, 1, 4, 2), (2.4, 1.9)), ((1, 1, 3, 3), 1.2), ((1, 1, 5, 2), (1.1, 2.2))])
@pytest.mark.parametrize("channels_last", [False, True])
def test_nearest_2d_output_as_long_or_twice_as_long_as_input(shape, scale_factor, channels_last):
    # SILENT: PyTorch's 2-d nearest kernel copies an axis whose output length equals the input's
    # (and repeats each input twice when it is twice as long) whatever the scale_factor; rows
    # 0, 0, 1 were read instead of 0, 1, 2 for 3 rows and scale_factor 1.3, gradient likewise
    a = np.arange(float(np.prod(shape))).reshape(shape)
    results = []
    for lib in (torch, tg):
        x = lib.tensor(a)
        if channels_last:
            x = x.contiguous(memory_format=lib.channels_last)
        x.requires_grad_()
        out = lib.nn.functional.interpolate(x, scale_factor=scale_factor, mode="nearest")
        weights = lib.arange(float(out.numel()), dtype=lib.float64).view(out.shape)
        (out * weights).sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])


@pytest.mark.parametrize("nd", [1, 3])
def test_nearest_1d_3d_keep_the_scale(nd):
    # (their kernels have no such shortcut: scale_factor 2.2 on 2 inputs reads 0, 0, 0, 1)
    shape = (1, 1) + (2,) * nd
    a = np.arange(float(2 ** nd)).reshape(shape)
    outs = [lib.nn.functional.interpolate(lib.tensor(a), scale_factor=2.2, mode="nearest").numpy()
            for lib in (torch, tg)]
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("scale_factor", [(1.3, 1.0), (1.3, 2.0), 1.3, (1.0, 1.3), (1.1, 0.5)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialias_passes_over_an_axis_of_unchanged_size(mode, scale_factor, align_corners):
    # SILENT: an axis whose output is as long as its input (3 rows, scale_factor 1.3) was
    # resampled with the scale's filter; PyTorch's separable kernel leaves it as it is
    a = np.random.default_rng(0).standard_normal((1, 2, 3, 4))
    outs = [lib.nn.functional.interpolate(lib.tensor(a), scale_factor=scale_factor, mode=mode,
                                          antialias=True, align_corners=align_corners).numpy()
            for lib in (torch, tg)]
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12, atol=1e-12)


def test_antialias_of_unchanged_size_is_a_new_tensor():
    x = tg.ones(1, 1, 3, 4, requires_grad=True)
    out = tg.nn.functional.interpolate(x, size=(3, 4), mode="bilinear", antialias=True)
    assert out is not x and out.data_ptr() != x.data_ptr()
    assert type(out.grad_fn).__name__ == type(torch.nn.functional.interpolate(
        torch.ones(1, 1, 3, 4, requires_grad=True), size=(3, 4), mode="bilinear",
        antialias=True).grad_fn).__name__
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((1, 1, 3, 4)))
