"""Regression tests from the proxyca proxy task (neural ODEs / dynamical systems scripts)."""
import numpy as np
import pytest

import tapegrad
from tapegrad.func import vmap as tg_vmap

torch = pytest.importorskip("torch")


def _conversions():
    # each is a Python conversion a per-sample function may try inside vmap
    return [
        ("bool", lambda z: bool(z.sum() > 0)),
        ("float", lambda z: float(z.sum())),
        ("int", lambda z: int(z.sum())),
        ("index", lambda z: [10, 20, 30][z.sum().long()]),
        ("item", lambda z: z.sum().item()),
        ("tolist", lambda z: z.tolist()),
        ("numpy", lambda z: z.numpy()),
        ("asarray", lambda z: np.asarray(z)),
    ]


@pytest.mark.parametrize("name", [n for n, _ in _conversions()])
def test_vmap_data_dependent_conversion_messages_match_torch(name):
    # PyTorch words three refusals differently: bool() is control flow, float()/int()/index go
    # through .item(), tolist()/numpy()/np.asarray have no storage to read.
    fn = dict(_conversions())[name]
    values = np.array([[1.0, 0.0], [0.5, 0.5], [2.0, -1.0]])
    with pytest.raises(RuntimeError) as expected:
        torch.func.vmap(lambda z: (fn(z), z)[1])(torch.tensor(values))
    with pytest.raises(RuntimeError) as got:
        tg_vmap(lambda z: (fn(z), z)[1])(tapegrad.tensor(values))
    assert str(got.value) == str(expected.value)


def test_vmap_refusal_class_prints_as_runtime_error():
    # (the refusal is a RuntimeError subclass that jacfwd catches; a script printing
    # type(e).__name__ saw 'DataDependentError' -- corpus func_jacobians_tour)
    with pytest.raises(RuntimeError) as info:
        tg_vmap(lambda a: a * a.sum().item())(tapegrad.ones(2, 3))
    assert type(info.value).__name__ == "RuntimeError"
