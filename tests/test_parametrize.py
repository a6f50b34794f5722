"""nn.utils.parametrize, nn.utils.parametrizations (orthogonal, weight_norm, spectral_norm) and
the hook-based nn.utils.weight_norm / spectral_norm.

With torch: the same layer (same weights) parametrized in both libraries gives the same
parametrized weight, gradients of the stored tensors, state_dict keys, reprs and errors.
Without torch: float64 central differences of every parametrization and the defining
properties (symmetry, orthogonality, unit spectral norm).
"""
from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.autograd import gradcheck
from tapegrad.nn.utils import parametrizations as PZ
from tapegrad.nn.utils import parametrize as P


def weights(out_features, in_features):
    w = np.sin(np.linspace(-1, 2, in_features * out_features)).reshape(out_features, in_features)
    return w + 0.3 * np.eye(out_features, in_features)


def linear(lib, in_features, out_features):
    """A float64 Linear of `lib` with deterministic weights (the two RNGs differ)."""
    m = lib.nn.Linear(in_features, out_features).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(weights(out_features, in_features)))
        m.bias.fill_(0.1)
    return m


def symmetric_class(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def rank_one_class(lib):
    class RankOne(lib.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            return Z[:, 0], Z[0, :]
    return RankOne


def double_class(lib):
    class Double(lib.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, X):
            return X / 2
    return Double


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol,
                               atol=tol)


X = np.linspace(-1, 1, 10).reshape(2, 5)


# -- parametrize ------------------------------------------------------------------------------

def test_register_moves_the_parameter_and_swaps_the_class():
    m = linear(tg, 3, 3)
    P.register_parametrization(m, "weight", symmetric_class(tg)())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias")
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    np.testing.assert_array_equal(m.weight.detach().numpy(), m.weight.detach().numpy().T)
    # right_inverse ran at registration: the original holds the upper triangle.
    np.testing.assert_array_equal(m.parametrizations.weight.original.detach().numpy(),
                                  np.triu(weights(3, 3)))
    assert repr(m) == ("ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n"
                       "  (parametrizations): ModuleDict(\n    (weight): ParametrizationList(\n"
                       "      (0): Symmetric()\n    )\n  )\n)")
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), m.weight.detach().numpy().T)


def test_chain_assignment_cache_and_leave_unparametrized():
    m = linear(tg, 3, 3)
    original = m.weight
    P.register_parametrization(m, "weight", double_class(tg)())
    P.register_parametrization(m, "weight", double_class(tg)())
    assert m.parametrizations.weight.original is original      # the same Parameter object
    m.weight = tg.eye(3, dtype=tg.float64) * 8
    np.testing.assert_array_equal(original.detach().numpy(), 2 * np.eye(3))
    np.testing.assert_array_equal(m.weight.detach().numpy(), 8 * np.eye(3))
    assert m.weight is not m.weight
    with P.cached():
        assert m.weight is m.weight
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(m.weight.detach().numpy(), 2 * np.eye(3))


def test_cached_value_belongs_to_its_module_not_to_a_reused_address():
    """PyTorch's cache is keyed by id(module): a module made inside a cached() block after
    another one died there can land at the same address and read the dead module's value
    (PyTorch 2.13 does, silently, about half the time in this loop); tapegrad's never does."""
    import gc
    stale = 0
    # gc.freeze: each collection below then scans only the objects this loop made, not the
    # whole test session's heap (100 full collections took ~50 s late in the suite).
    gc.freeze()
    try:
        with P.cached():
            for k in range(100):
                m = linear(tg, 2, 2)
                with tg.no_grad():
                    m.weight.fill_(k)
                P.register_parametrization(m, "weight", double_class(tg)())
                stale += m.weight[0, 0].item() != k    # (right_inverse halves, forward doubles)
                assert m.weight is m.weight                    # still cached within the block
                del m
                gc.collect()
    finally:
        gc.unfreeze()
    assert stale == 0


def test_several_originals():
    m = linear(tg, 3, 3)
    P.register_parametrization(m, "weight", rank_one_class(tg)())
    chain = m.parametrizations.weight
    assert not chain.is_tensor and chain.ntensors == 2
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    assert isinstance(chain.original0, nn.Parameter)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad


def test_errors():
    class Bad(nn.Module):
        def forward(self, X):
            return X[0]
    with pytest.raises(ValueError, match="may not change the shape.*\nunparametrized shape: "
                       r"torch.Size\(\[2, 2\]\)"):
        P.register_parametrization(nn.Linear(2, 2), "weight", Bad())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                       "parametrized element with name 'foo'"):
        P.register_parametrization(nn.Linear(2, 2), "foo", Bad())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(nn.Linear(2, 2), "bias")
    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", symmetric_class(tg)())
    with pytest.raises(ValueError, match=r"may not change the shape of the tensor, unless the "
                       r"`unsafe` flag is enabled.\nmodule.weight.shape"):
        P.register_parametrization(m, "weight", Bad())
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        pickle.dumps(m)
    m2 = copy.deepcopy(m)
    assert type(m2).__name__ == "ParametrizedLinear"
    np.testing.assert_array_equal(m2.weight.detach().numpy(), m.weight.detach().numpy())
    assert P.type_before_parametrizations(m) is nn.Linear


def test_parametrize_parity_with_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        m = linear(lib, 3, 3)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", symmetric_class(lib)())
        lib.nn.utils.parametrize.register_parametrization(m, "weight", double_class(lib)())
        m(lib.tensor(X[:, :3])).pow(2).sum().backward()
        results.append((m.weight, m.parametrizations.weight.original.grad, repr(m),
                        list(m.state_dict())))
    (w, g, r, k), (tw, tgrad, tr, tk) = results
    close(w, tw)
    close(g, tgrad)
    assert r == tr and k == tk


# -- parametrizations ------------------------------------------------------------------------

def check_gradients(chain_module):
    """float64 central differences of the parametrized weight w.r.t. its stored tensors."""
    chain = chain_module.parametrizations.weight
    names = ["original"] if chain.is_tensor else [f"original{i}" for i in range(chain.ntensors)]
    stored = [getattr(chain, n).detach().clone().requires_grad_(True) for n in names]
    parametrization = chain[0]
    if getattr(parametrization, "orthogonal_map", None) is PZ._OrthMaps.householder:
        # The diagonal holds the signs +-1 read through int(): piecewise constant, so the
        # differences go through the reflectors below the diagonal only.
        signs = stored[0].detach() * tg.eye(*stored[0].shape[-2:], dtype=tg.float64)
        below = tg.ones(stored[0].shape[-2:], dtype=tg.float64).tril(-1)
        assert gradcheck(lambda t: parametrization(t * below + signs), stored)
        return
    assert gradcheck(lambda *t: parametrization(*t), stored)


def test_weight_norm_values_gradients_and_legacy_keys():
    m = PZ.weight_norm(linear(tg, 3, 4))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    assert tuple(m.parametrizations.weight.original0.shape) == (4, 1)
    close(m.weight, tg.tensor(weights(4, 3)))
    check_gradients(m)
    whole = PZ.weight_norm(linear(tg, 3, 4), dim=None)
    assert whole.parametrizations.weight.original0.dim() == 0
    check_gradients(whole)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        legacy = nn.utils.weight_norm(linear(tg, 3, 4))
    with tg.no_grad():
        legacy.weight_g.mul_(2)
    fresh = PZ.weight_norm(linear(tg, 3, 4))
    fresh.load_state_dict(legacy.state_dict())
    close(fresh.weight, tg.tensor(2 * weights(4, 3)))


def test_legacy_weight_norm():
    with pytest.warns(FutureWarning, match="deprecated"):
        m = nn.utils.weight_norm(linear(tg, 3, 4))
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    close(m.weight, tg.tensor(weights(4, 3)))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same "
                       "parameter weight"), pytest.warns(FutureWarning):
        nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(m)


def test_spectral_norm_has_unit_norm_and_gradients():
    m = PZ.spectral_norm(linear(tg, 5, 4))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    for _ in range(10):
        W = m.weight
    assert abs(float(tg.linalg.matrix_norm(W.detach(), 2)) - 1) < 1e-8
    m.eval()
    check_gradients(m)
    conv = PZ.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert tuple(conv.parametrizations.weight[0]._u.shape) == (3,)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("shape, orthogonal_map, trivial", [
    ((4, 4), None, True), ((4, 4), "cayley", True), ((5, 3), "householder", False),
    ((3, 5), None, False), ((5, 3), None, True), ((2, 4, 3), "matrix_exp", True)])
def test_orthogonal_is_orthogonal_and_differentiable(shape, orthogonal_map, trivial):
    m = nn.Module()
    rng = np.random.default_rng(3)
    m.weight = nn.Parameter(tg.tensor(rng.standard_normal(shape)))
    PZ.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=trivial)
    Q = m.weight.detach().numpy()
    small = min(shape[-2:])
    gram = Q.swapaxes(-1, -2) @ Q if shape[-2] >= shape[-1] else Q @ Q.swapaxes(-1, -2)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-10)
    check_gradients(m)
    if trivial or orthogonal_map == "householder" or shape[-2] != shape[-1]:
        target = np.linalg.qr(rng.standard_normal(shape))[0] \
            if shape[-2] >= shape[-1] else None
        if target is not None:
            m.weight = tg.tensor(target)
            np.testing.assert_allclose(m.weight.detach().numpy(), target, atol=1e-10)


def test_householder_product_matches_torch_and_is_differentiable():
    A = np.sin(np.arange(15.0)).reshape(5, 3)
    X, tau = tg.geqrf(tg.tensor(A))
    Q = tg.linalg.householder_product(X, tau).numpy()
    R = np.triu(X.numpy())[:3]
    np.testing.assert_allclose(Q @ R, A, atol=1e-12)
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)
    assert gradcheck(tg.linalg.householder_product,
                     [tg.tensor(X.numpy(), requires_grad=True),
                      tg.tensor(tau.numpy(), requires_grad=True)])
    with pytest.raises(RuntimeError, match="input.shape\\[-2\\] must be greater than or equal"):
        tg.linalg.householder_product(tg.ones(2, 3), tg.ones(1))
    with pytest.raises(RuntimeError, match="tau dtype Double does not match input dtype Float"):
        tg.linalg.householder_product(tg.ones(3, 2), tg.ones(2, dtype=tg.float64))
    torch = pytest.importorskip("torch")
    batch = np.random.default_rng(2).standard_normal((2, 4, 3))
    a, t = torch.geqrf(torch.tensor(batch))
    np.testing.assert_allclose(
        tg.linalg.householder_product(tg.tensor(a.numpy()), tg.tensor(t.numpy())).numpy(),
        torch.linalg.householder_product(a, t).numpy(), atol=1e-12)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", '
                       '"cayley", "householder". Got: foo'):
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="foo")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor "
                       "of 1 dimensions."):
        PZ.orthogonal(nn.Linear(3, 3), "bias")
    m = PZ.orthogonal(nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m.weight = tg.eye(3)


def test_legacy_spectral_norm():
    m = nn.utils.spectral_norm(linear(tg, 5, 4))
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert m.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    for _ in range(20):
        m(tg.tensor(X))
    assert abs(float(tg.linalg.matrix_norm(m.weight.detach(), 2)) - 1) < 1e-8
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(m)


def fixed_singular_vectors(lib, u_holder, v_holder):
    with lib.no_grad():
        u_holder.copy_(lib.ones(u_holder.shape[0], dtype=lib.float64) / u_holder.shape[0] ** 0.5)
        v_holder.copy_(lib.ones(v_holder.shape[0], dtype=lib.float64) / v_holder.shape[0] ** 0.5)


def test_norms_parity_with_torch():
    torch = pytest.importorskip("torch")
    warnings.simplefilter("ignore", FutureWarning)
    out = {}
    for lib in (tg, torch):
        utils = lib.nn.utils
        res = out[lib] = []
        for make in (lambda m: utils.parametrizations.weight_norm(m),
                     lambda m: utils.parametrizations.weight_norm(m, dim=1),
                     lambda m: utils.weight_norm(m)):
            m = make(linear(lib, 5, 4))
            m(lib.tensor(X)).pow(2).sum().backward()
            res += [m.weight] + [p.grad for p in m.parameters()] + [repr(m), list(m.state_dict())]
        m = utils.parametrizations.spectral_norm(linear(lib, 5, 4))
        sn = m.parametrizations.weight[0]
        fixed_singular_vectors(lib, sn._u, sn._v)
        m(lib.tensor(X)).pow(2).sum().backward()
        res += [sn._u, sn._v, m.parametrizations.weight.original.grad, repr(m)]
        m = utils.spectral_norm(linear(lib, 5, 4))
        fixed_singular_vectors(lib, m.weight_u, m.weight_v)
        m(lib.tensor(X)).pow(2).sum().backward()
        res += [m.weight_u, m.weight_v, m.weight_orig.grad, m.weight, repr(m)]
        for shape, orth_map, trivial in [((4, 4), None, True), ((4, 4), "cayley", True),
                                         ((5, 3), "householder", False), ((3, 5), None, False)]:
            m = utils.parametrizations.orthogonal(linear(lib, shape[1], shape[0]), "weight",
                                                  orth_map, use_trivialization=trivial)
            m.weight.pow(3).sum().backward()
            res += [m.weight, m.parametrizations.weight.original.grad]
    for ours, theirs in zip(out[tg], out[torch]):
        if isinstance(ours, (str, list)):
            assert ours == theirs
        else:
            close(ours, theirs, tol=1e-9)


@pytest.mark.parametrize("dim, g_shape", [(0, (3, 1)), (1, (1, 4)), (-1, ())])
def test_weight_norm_node_second_derivatives(dim, g_shape):
    from tapegrad.autograd import gradgradcheck
    from tapegrad.nn.utils.weight_norm import _weight_norm
    rng = np.random.default_rng(5)
    v = tg.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    g = tg.tensor(rng.uniform(0.5, 2, g_shape), requires_grad=True)
    # PyTorch fuses a first or last dim into one node; the whole-tensor norm (-1) is op by op
    fused = "WeightNormInterfaceBackward0" if dim in (0, 1) else "MulBackward0"
    assert _weight_norm(v, g, dim).grad_fn.name() == fused
    assert gradcheck(lambda a, b: _weight_norm(a, b, dim), [v, g])
    assert gradgradcheck(lambda a, b: _weight_norm(a, b, dim), [v, g])


def test_assigning_a_parameter_over_the_property_raises():
    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", symmetric_class(tg)())
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.weight = nn.Parameter(tg.ones(2, 2))
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        nn.Linear(2, 2).forward = nn.Parameter(tg.ones(1))
    m.weight = tg.ones(2, 2)                   # a plain tensor goes through right_inverse
    np.testing.assert_array_equal(m.parametrizations.weight.original.detach().numpy(),
                                  np.triu(np.ones((2, 2))))
