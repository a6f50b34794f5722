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


def _rebuild_manifold_tensor(*args, build_fn):
    tensor = build_fn(*args[:-4])
    return args[-3](tensor, manifold=args[-2], requires_grad=args[-1])


def _reducing_classes(torch_module, nn_module):
    """geoopt's ManifoldTensor/ManifoldParameter with their own __reduce_ex__, which wraps
    Tensor's to rebuild the class and its manifold (module-level classes: pickle finds them)."""
    import functools

    class ManifoldTensor(torch_module.Tensor):
        def __new__(cls, data, manifold=None, requires_grad=False):
            instance = torch_module.Tensor._make_subclass(cls, data.data, requires_grad)
            instance.manifold = manifold
            return instance

        def __reduce_ex__(self, proto):
            build, proto = super().__reduce_ex__(proto)
            return (functools.partial(_rebuild_manifold_tensor, build_fn=build),
                    proto + (dict(), self.__class__, self.manifold, self.requires_grad))

    class ManifoldParameter(ManifoldTensor, nn_module.Parameter):
        def __new__(cls, data=None, manifold=None, requires_grad=True):
            if not isinstance(data, ManifoldTensor):
                data = ManifoldTensor(data, manifold=manifold)
            instance = ManifoldTensor._make_subclass(cls, data, requires_grad)
            instance.manifold = data.manifold
            return instance

    for cls in (ManifoldTensor, ManifoldParameter):
        name = f"{cls.__name__}_{torch_module.__name__}"
        cls.__qualname__ = cls.__name__ = name
        globals()[name] = cls
    return ManifoldTensor, ManifoldParameter


def _save_load(torch_module, nn_module):
    import io
    ManifoldTensor, ManifoldParameter = _reducing_classes(torch_module, nn_module)
    model = nn_module.Module()
    model.emb = ManifoldParameter(torch_module.tensor([[0.1, 0.2]]), manifold="PoincareBall")
    model.lin = nn_module.Linear(2, 1)
    buf = io.BytesIO()
    torch_module.save({"model": model, "t": ManifoldTensor(torch_module.ones(2), "Sphere")}, buf)
    buf.seek(0)
    loaded = torch_module.load(buf, weights_only=False)
    emb, t = loaded["model"].emb, loaded["t"]
    return [type(emb).__name__.split("_")[0], emb.manifold, emb.requires_grad, emb.tolist(),
            type(loaded["model"].lin.weight).__name__, type(t).__name__.split("_")[0],
            t.manifold, t.tolist()]


def test_save_load_keeps_a_subclass_that_reduces_itself():
    # (was SILENT: the ManifoldParameter came back a plain Parameter, which geoopt's optimizers
    # then update as a Euclidean one)
    torch = pytest.importorskip("torch")
    assert _save_load(tg, tnn) == _save_load(torch, torch.nn)
    assert _save_load(tg, tnn)[:2] == ["ManifoldParameter", "PoincareBall"]


def test_torch_utils_reachable_with_rebuild_functions():
    import tapegrad._torch_checkpoint as checkpoint
    assert tg._utils._rebuild_parameter is checkpoint._rebuild_parameter
    assert tg._utils._rebuild_tensor_v2 is checkpoint._rebuild_tensor_v2
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        tg._utils.nothing
