"""What the session-18 held-out proxy (rasbt/LLMs-from-scratch, zhangxiann/PyTorch_Practice,
yunfei-teng/PyTorch-Tutorial-Spring-2018) found tapegrad lacking: PyTorch's deprecated
scalar-first overloads (torch.add(a, 10, b), p.data.add_(-lr, grad), addcmul_(v, t1, t2)), which
old tutorial and optimizer code uses."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

_RNG = np.random.default_rng(18)
_A, _B, _C = (_RNG.standard_normal((3, 4)) for _ in range(3))

# (name, call with the deprecated form, the same with the current form)
_FORMS = [
    ("add", lambda T, a, b, c: T.add(a, 10, b), lambda T, a, b, c: T.add(a, b, alpha=10)),
    ("sub", lambda T, a, b, c: T.sub(a, 0.5, b), lambda T, a, b, c: T.sub(a, b, alpha=0.5)),
    ("Tensor.add", lambda T, a, b, c: a.add(-2, b), lambda T, a, b, c: a.add(b, alpha=-2)),
    ("Tensor.sub", lambda T, a, b, c: a.sub(3, b), lambda T, a, b, c: a.sub(b, alpha=3)),
    ("addcmul", lambda T, a, b, c: T.addcmul(a, 0.3, b, c),
     lambda T, a, b, c: T.addcmul(a, b, c, value=0.3)),
    ("addcdiv", lambda T, a, b, c: T.addcdiv(a, -1.5, b, c.exp()),
     lambda T, a, b, c: T.addcdiv(a, b, c.exp(), value=-1.5)),
    ("Tensor.addcmul", lambda T, a, b, c: a.addcmul(2, b, c),
     lambda T, a, b, c: a.addcmul(b, c, value=2)),
    ("Tensor.addcdiv", lambda T, a, b, c: a.addcdiv(2, b, c.exp()),
     lambda T, a, b, c: a.addcdiv(b, c.exp(), value=2)),
    ("add_", lambda T, a, b, c: (a * 1).add_(-0.1, b), lambda T, a, b, c: (a * 1).add_(b, alpha=-0.1)),
    ("sub_", lambda T, a, b, c: (a * 1).sub_(4, b), lambda T, a, b, c: (a * 1).sub_(b, alpha=4)),
    ("addcmul_", lambda T, a, b, c: (a * 1).addcmul_(0.01, b, b),
     lambda T, a, b, c: (a * 1).addcmul_(b, b, value=0.01)),
    ("addcdiv_", lambda T, a, b, c: (a * 1).addcdiv_(-0.1, b, c.exp()),
     lambda T, a, b, c: (a * 1).addcdiv_(b, c.exp(), value=-0.1)),
]


@pytest.mark.parametrize("name,old,new", _FORMS, ids=[f[0] for f in _FORMS])
def test_deprecated_scalar_first_overload_values_and_gradients(name, old, new, gradcheck, torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradcheck(lambda a, b, c: old(tg, a, b, c) * c, _A, _B, _C)
        ours = [tg.tensor(x, requires_grad=True) for x in (_A, _B, _C)]
        theirs = [torch.tensor(x, requires_grad=True) for x in (_A, _B, _C)]
        out, ref = old(tg, *ours), old(torch, *theirs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(),
                               new(tg, *[tg.tensor(x) for x in (_A, _B, _C)]).numpy(), rtol=1e-12)
    (out * tg.tensor(_C)).sum().backward()
    (ref * torch.tensor(_C)).sum().backward()
    for t, r in zip(ours, theirs):
        if r.grad is None:
            assert t.grad is None
        else:
            np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-12)


def test_deprecated_overload_with_out_and_the_old_optimizer_step(torch):
    """torch.add(a, alpha, b, out=o), and the pre-1.5 SGD-with-momentum / Adam step written with
    the deprecated forms on .data, as old tutorial optimizers do."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for T in (tg, torch):
            o = T.empty(3, 4)
            r = T.add(T.tensor(_A), 0.25, T.tensor(_B), out=o)
            assert r is o
            np.testing.assert_allclose(o.numpy(), _A + 0.25 * _B, rtol=1e-6)
        results = []
        for T in (tg, torch):
            p = T.tensor(_A, requires_grad=True)
            m, v = T.zeros(3, 4, dtype=T.float64), T.zeros(3, 4, dtype=T.float64)
            for step in range(3):
                loss = (p * T.tensor(_B) + p ** 2).sum()
                p.grad = None
                loss.backward()
                g = p.grad.data
                m.mul_(0.9).add_(1 - 0.9, g)
                v.mul_(0.999).addcmul_(1 - 0.999, g, g)
                p.data.addcdiv_(-0.01, m, v.sqrt().add_(1e-8))
                p.data.add_(-0.001, g)
            results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_deprecated_overload_warns_once_and_current_forms_unchanged(torch):
    with pytest.raises(TypeError):
        tg.add(tg.ones(2), 1, tg.ones(2), tg.ones(2))          # (too many: neither form)
    t = tg.ones(2)
    np.testing.assert_allclose(tg.add(t, 2).numpy(), [3., 3.])
    np.testing.assert_allclose(tg.add(t, t, alpha=3).numpy(), [4., 4.])
    np.testing.assert_allclose(tg.addcmul(t, t, t).numpy(), [2., 2.])
    assert tg.add.__name__ == "add" and tg.Tensor.add_.__name__ == "add_"


# -- loss shape checks (zhangxiann lesson4: CosineEmbeddingLoss with a 2-D target) ---------------

def _outcome(T, fn, shapes, long_target):
    F = T.nn.functional
    args = [T.full(s, 0.5) for s in shapes[:-1]]
    args.append(T.zeros(shapes[-1], dtype=T.long) if long_target else T.ones(shapes[-1]))
    try:
        out = getattr(F, fn)(*args, reduction="none")
    except Exception as e:          # noqa: BLE001  (the exception itself is compared)
        return type(e), str(e)
    return tuple(out.shape), out.detach().numpy().round(6).tolist()


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (1, 2)), ((2, 3), (2, 3), (2,)),
                                    ((3,), (3,), ()), ((3,), (3,), (1,)), ((2, 3), (2, 3), ()),
                                    ((2, 3), (3,), (2,)), ((2, 2, 3), (2, 2, 3), (2,)),
                                    ((2, 2, 3), (2, 2, 3), (2, 2))])
def test_cosine_embedding_loss_target_and_input_ranks(shapes, torch):
    """SILENT before: a 2-D target or 3-D inputs broadcast into a result of the wrong shape
    where PyTorch refuses them."""
    assert _outcome(tg, "cosine_embedding_loss", shapes, False) == \
        _outcome(torch, "cosine_embedding_loss", shapes, False)


@pytest.mark.parametrize("fn,shapes", [
    ("multi_margin_loss", s) for s in [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3, 1), (2,)),
                                       ((3,), (2,)), ((3,), ()), ((2, 0), (2,)), ((0,), ()),
                                       ((), (1,)), ((2, 3), (2,))]] + [
    ("multilabel_margin_loss", s) for s in [((2, 3), (3,)), ((2, 3, 1), (2, 3, 1)),
                                            ((3,), (1, 3)), ((2, 0), (2, 0)), ((2, 3), (2, 3))]])
def test_multi_margin_losses_shape_checks(fn, shapes, torch):
    """multi_margin_loss took a (N, 1) target (flattened) and named a wrong size in another
    phrase; multilabel_margin_loss met a wrong target size with a numpy ValueError."""
    assert _outcome(tg, fn, shapes, True) == _outcome(torch, fn, shapes, True)
