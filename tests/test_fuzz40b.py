"""Differences the session-40 fuzz runs (second pass) found (tools/fuzz.py), each checked
against torch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(build):
    """build(T) run under torch and under tapegrad: the two results."""
    return build(torch), build(tg)


def _assert_same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.detach().float().numpy(),
                                  theirs.detach().float().numpy())


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["cov", "corrcoef", "cov_aweights", "cov_1d"])
def test_cov_under_autocast_runs_its_mm_in_the_autocast_dtype(low, op):
    """PyTorch's cov reaches mm through the dispatcher, so autocast casts its operands: the
    result is in the autocast dtype (it stayed float32 here: fuzz seed 66200106)."""
    def build(T):
        x = T.tensor([[0.78, 0.67, 1.87], [1.0, 2.0, 0.5]], requires_grad=True)
        with T.autocast("cpu", dtype=getattr(T, low)):
            out = {"cov": lambda: T.cov(x), "corrcoef": lambda: T.corrcoef(x),
                   "cov_aweights": lambda: T.cov(x, aweights=T.tensor([1.0, 2.0, 0.5])),
                   "cov_1d": lambda: T.cov(x[0])}[op]()
        grad, = T.autograd.grad(out.float().sum(), x)
        return out, grad
    (theirs, their_grad), (ours, our_grad) = _both(build)
    _assert_same(ours, theirs)
    _assert_same(our_grad, their_grad)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("cell", ["RNNCell", "GRUCell", "LSTMCell"])
def test_recurrent_cells_under_autocast_compute_in_the_autocast_dtype(low, cell):
    """Under a bfloat16 autocast the cells' linear gives bfloat16 gates: RNNCell's result is
    bfloat16 and GRU's and LSTM's gates are rounded as PyTorch's (the core's tanh and chunk
    returned float32 here, so RNNCell was float32 and the others' values off)."""
    def build(T):
        x = T.tensor([[0.5, 0.2], [0.1, 0.9]], requires_grad=True)
        module = getattr(T.nn, cell)(2, 2)
        with T.no_grad():
            for p in module.parameters():
                p.copy_(T.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
        with T.autocast("cpu", dtype=getattr(T, low)):
            out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        grads = T.autograd.grad(out.float().sum(), [x, module.weight_hh])
        return out, grads
    (theirs, their_grads), (ours, our_grads) = _both(build)
    _assert_same(ours, theirs)
    for mine, reference in zip(our_grads, their_grads):
        _assert_same(mine, reference)


@pytest.mark.parametrize("weights_only", [True, False])
def test_load_of_empty_views_past_their_storage_end(weights_only):
    """PyTorch lets an empty view start past its storage's end (a one-element tensor's [1:] of
    a step slice, an empty tensor's [1:]); loading its checkpoint raised numpy's 'strides is
    incompatible' here (fuzz formats seeds 2283, 2556, 2619)."""
    import io
    base = torch.tensor([2], dtype=torch.int16)
    past_end = base.flatten()[::3].reshape(-1)[1:]
    empty = torch.tensor([], dtype=torch.float64).reshape((2, 0, 1)).requires_grad_(True)
    obj = {"base": base, "past_end": past_end, "sliced": empty[::2][1:],
           "boxes": torch.tensor([], dtype=torch.int8).reshape((1, 0, 0))[1:]}
    assert past_end.storage_offset() == 3 and past_end.untyped_storage().nbytes() == 2
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    loaded = tg.load(buffer, weights_only=weights_only)
    assert set(loaded) == set(obj)
    for key, theirs in obj.items():
        ours = loaded[key]
        assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
        assert ours.requires_grad == theirs.requires_grad
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _raised(call):
    try:
        call()
    except Exception as e:          # noqa: BLE001 - the exception is what is compared
        return type(e), str(e)
    return None


_B = "bfloat16"
_ARGUMENT_ERRORS_BEFORE_NO_KERNEL = {
    # fuzz seed 66200096: the shape check before the missing kernel
    "multilabel_margin_loss_3d": lambda T: T.nn.functional.multilabel_margin_loss(
        T.ones(4, 2, 1, dtype=getattr(T, _B)), T.zeros(4, 2, 1, dtype=T.long)),
    "multilabel_margin_loss_target": lambda T: T.nn.functional.multilabel_margin_loss(
        T.ones(4, 2, dtype=getattr(T, _B)), T.zeros(4, 3, dtype=T.long)),
    "multi_margin_loss_target": lambda T: T.nn.functional.multi_margin_loss(
        T.ones(4, 2, dtype=getattr(T, _B)), T.zeros(3, dtype=T.long)),
    "multi_margin_loss_p": lambda T: T.nn.functional.multi_margin_loss(
        T.ones(4, 2, dtype=getattr(T, _B)), T.zeros(4, dtype=T.long), p=3),
    # fuzz seed 66200385: the dtype comparison of a solve's operands
    "solve_mixed": lambda T: T.linalg.solve(T.eye(2, dtype=getattr(T, _B)), T.ones(2, 1)),
    "solve_mixed_reversed": lambda T: T.linalg.solve(T.eye(2), T.ones(2, 1, dtype=getattr(T, _B))),
    "solve_ex_mixed": lambda T: T.linalg.solve_ex(T.eye(2, dtype=getattr(T, _B)), T.ones(2, 1)),
    "triangular_solve_mixed": lambda T: T.triangular_solve(T.ones(2, 1),
                                                           T.eye(2, dtype=getattr(T, _B))),
    "cholesky_solve_mixed": lambda T: T.cholesky_solve(T.ones(2, 1, dtype=getattr(T, _B)),
                                                       T.eye(2)),
    "lu_solve_mixed": lambda T: T.linalg.lu_solve(T.eye(2, dtype=getattr(T, _B)),
                                                  T.ones(2, dtype=T.int32), T.ones(2, 1)),
    # (no bfloat16 kernel at all: these computed here)
    "cholesky_solve": lambda T: T.cholesky_solve(T.ones(2, 1, dtype=getattr(T, _B)),
                                                 T.eye(2, dtype=getattr(T, _B))),
    "lu_solve": lambda T: T.linalg.lu_solve(T.eye(2, dtype=getattr(T, _B)),
                                            T.ones(2, dtype=T.int32),
                                            T.ones(2, 1, dtype=getattr(T, _B))),
    "solve_shapes": lambda T: T.linalg.solve(T.eye(2, dtype=getattr(T, _B)),
                                             T.ones(3, 1, dtype=getattr(T, _B))),
    "det_not_square": lambda T: T.linalg.det(T.ones(2, 3, dtype=getattr(T, _B))),
    "inv_not_square": lambda T: T.linalg.inv(T.ones(2, 3, dtype=getattr(T, _B))),
    "eigh_not_square": lambda T: T.linalg.eigh(T.ones(2, 3, dtype=getattr(T, _B))),
    "qr_1d": lambda T: T.linalg.qr(T.ones(2, dtype=getattr(T, _B))),
    "pdist_3d": lambda T: T.nn.functional.pdist(T.ones(2, 2, 2, dtype=getattr(T, _B))),
    "cdist_1d": lambda T: T.cdist(T.ones(2, dtype=getattr(T, _B)), T.ones(2, dtype=getattr(T, _B))),
    "histogram_bins": lambda T: T.histogram(T.ones(2, dtype=getattr(T, _B)), bins=-1),
    "avg_pool3d_2d": lambda T: T.nn.functional.avg_pool3d(T.ones(2, 2, dtype=getattr(T, _B)), 1),
    # (the kernel is never reached: a singular A is not the solver's failure)
    "solve_singular": lambda T: T.linalg.solve(T.zeros(2, 2, dtype=getattr(T, _B)),
                                               T.ones(2, 1, dtype=getattr(T, _B))),
    # the dtype checked first, as PyTorch's
    "fft_dim": lambda T: T.fft.fft(T.ones(2, dtype=getattr(T, _B)), dim=3),
    "ctc_lengths": lambda T: T.nn.functional.ctc_loss(
        T.ones(3, 2, dtype=getattr(T, _B)), T.ones(1, 2, dtype=T.long), T.tensor([3]),
        T.tensor([2, 1])),
}


@pytest.mark.parametrize("case", sorted(_ARGUMENT_ERRORS_BEFORE_NO_KERNEL))
def test_bfloat16_refusals_check_arguments_first(case):
    """PyTorch checks an op's arguments (shapes, a solve's operand dtypes) before its dtype
    dispatch finds no bfloat16 kernel: the same exception and words here."""
    build = _ARGUMENT_ERRORS_BEFORE_NO_KERNEL[case]
    theirs, ours = _raised(lambda: build(torch)), _raised(lambda: build(tg))
    assert theirs is not None
    assert ours == theirs
