"""Hyperbolic and Riemannian ML scripts (geoopt, HGCN, Poincare embeddings): what they needed."""
import pytest

import tapegrad as tg
import tapegrad.nn as tnn


def _manifold_classes(torch_module, nn_module):
    """geoopt's pattern: a dispatching Tensor subclass and a Parameter deriving from it and from
    nn.Parameter (which opts out of __torch_function__)."""
    class ManifoldTensor(torch_module.Tensor):
        def __new__(cls, data, requires_grad=False):
            instance = torch_module.Tensor._make_subclass(cls, data, requires_grad)
            instance.manifold = "Sphere"
            return instance

    class ManifoldParameter(ManifoldTensor, nn_module.Parameter):
        def __new__(cls, data, requires_grad=True):
            if not isinstance(data, ManifoldTensor):
                data = ManifoldTensor(data)
            instance = ManifoldTensor._make_subclass(cls, data, requires_grad)
            instance.manifold = data.manifold
            return instance

    class Labelled(ManifoldParameter):
        def __repr__(self):
            return "on {}:\n".format(self.manifold) + torch_module.Tensor.__repr__(self)

    return ManifoldTensor, ManifoldParameter, Labelled


def _exercise(torch_module, nn_module):
    ManifoldTensor, ManifoldParameter, Labelled = _manifold_classes(torch_module, nn_module)
    t = ManifoldTensor(torch_module.tensor([3.0, 4.0]))
    p = ManifoldParameter(torch_module.tensor([1.0, 2.0]))
    q = Labelled(torch_module.tensor([0.5]))
    out = [str(p.dtype), repr(p), str(p), str(q), repr(t)]
    out += [type(x).__name__ for x in (p * 2, 1 - p, p.sum(), p + t, torch_module.add(p, t))]
    out += [repr((1 - p).detach()), repr(p.norm())]

    class MyParam(nn_module.Parameter):
        pass
    out += [repr(MyParam(torch_module.ones(2))), str(MyParam(torch_module.ones(1)))]
    return out


def test_manifold_parameter_of_a_dispatching_subclass_behaves_as_in_torch():
    torch = pytest.importorskip("torch")
    assert _exercise(tg, tnn) == _exercise(torch, torch.nn)


def test_manifold_parameter_repr_and_plain_ops():
    _, ManifoldParameter, Labelled = _manifold_classes(tg, tnn)
    p = ManifoldParameter(tg.tensor([1.0, 2.0]))
    assert repr(p) == ("Parameter containing:\n"
                       "Parameter(ManifoldParameter([1., 2.], requires_grad=True))")
    assert str(Labelled(tg.tensor([0.5]))).startswith("on Sphere:\n")
    loss = (p * p).sum()
    loss.backward()
    assert p.grad.tolist() == [2.0, 4.0]


def _declining(torch_module):
    class Declining(torch_module.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    n = torch_module.Tensor._make_subclass(Declining, torch_module.ones(2))
    out = []
    for call in (lambda: n.dtype, lambda: n.sum(), lambda: torch_module.add(n, 1)):
        with pytest.raises(TypeError) as info:
            call()
        out.append(str(info.value).split(";")[0])
    return out


def test_declined_call_raises_torchs_type_error():
    torch = pytest.importorskip("torch")
    assert _declining(tg) == _declining(torch)
    assert _declining(tg)[0] == "Multiple dispatch failed for 'torch.Tensor.dtype.__get__'"
