"""Session 32 (lead): regressions found by the training-loop fuzzer (tools/fuzz_train.py), each
checked against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


@pytest.fixture
def default_float64():
    """Both libraries with float64 as the default dtype for the test's duration."""
    saved = tapegrad.get_default_dtype(), torch.get_default_dtype()
    tapegrad.set_default_dtype(tapegrad.float64)
    torch.set_default_dtype(torch.float64)
    yield
    tapegrad.set_default_dtype(saved[0])
    torch.set_default_dtype(saved[1])


SCALAR_STATE_OPTIMIZERS = [
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "decoupled_weight_decay": True, "weight_decay": 0.01}),
    ("ASGD", {"lr": 0.01}),
    ("ASGD", {"lr": 0.01, "foreach": True}),
    ("ASGD", {"lr": 0.01, "t0": 2}),
    ("Adam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01}),
]


@pytest.mark.parametrize("name,kwargs", SCALAR_STATE_OPTIMIZERS)
@pytest.mark.usefixtures("default_float64")
def test_scalar_state_follows_a_float64_default_dtype(name, kwargs):
    # SILENT: under set_default_dtype(float64) PyTorch keeps an optimizer's scalar state (step,
    # NAdam's mu_product, ASGD's eta and mu) in float64; tapegrad kept float32, so NAdam's and
    # ASGD's float64 updates drifted by ~1e-8 relative from the first step on.
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(5)]
    results = []
    for lib in (torch, tapegrad):
        w = lib.nn.Parameter(lib.tensor(w0))
        opt = getattr(lib.optim, name)([w], **kwargs)
        for g in grads:
            w.grad = lib.tensor(g)
            opt.step()
        state = {k: (str(v.dtype).split(".")[-1], v.item()) for k, v in opt.state[w].items()
                 if v.ndim == 0}
        results.append((w.detach().numpy().copy(), state))
    (t_w, t_state), (g_w, g_state) = results
    np.testing.assert_array_equal(g_w, t_w)
    assert g_state == t_state


def test_scalar_state_stays_float32_under_the_float32_default():
    w = tapegrad.nn.Parameter(tapegrad.ones(3, dtype=tapegrad.float64))
    opt = tapegrad.optim.NAdam([w], lr=0.01)
    w.grad = tapegrad.ones(3, dtype=tapegrad.float64)
    opt.step()
    assert opt.state[w]["step"].dtype == tapegrad.float32
    assert opt.state[w]["mu_product"].dtype == tapegrad.float32


def test_lbfgs_cubic_interpolation_of_a_degenerate_bracket_takes_the_midpoint():
    # x1 == x2 makes the cubic's coefficients NaN; PyTorch's `if d2_square >= 0` then takes the
    # bracket's midpoint, where tapegrad's `if d2_square < 0` went on and returned NaN as the
    # line search's next step
    import warnings
    from torch.optim.lbfgs import _cubic_interpolate as torch_cubic
    from tapegrad.optim.lbfgs import _cubic_interpolate
    args = (1.0, 2.0, -1.0, 1.0, 2.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = _cubic_interpolate(*(np.float64(a) for a in args), bounds=(0.5, 2.0))
    theirs = torch_cubic(*(torch.tensor(a, dtype=torch.float64) for a in args), bounds=(0.5, 2.0))
    assert float(ours) == float(theirs) == 1.25
