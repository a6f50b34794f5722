"""F.softmax / F.log_softmax / F.softmin given something that is not a tensor: PyTorch's versions
are Python that read `input.dim()` (no dim given) and call `input.softmax(dim)` (log_softmax:
`input.log_softmax`; softmin: `(-input).softmax`), so an int, a list, None or an ndarray fails
with AttributeError naming that method, and an object with those methods is served by them.
Found running aladdinpersson's ResNet script, whose `self.softmax(1)` is nn.Softmax on an int."""
import numpy as np
import pytest

import tapegrad
import tapegrad.nn.functional as GF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

NOT_TENSORS = [lambda: 1, lambda: [1.0, 2.0], lambda: None, lambda: np.ones(3),
               lambda: np.float64(2.0)]


def _error(call):
    try:
        call()
    except Exception as e:              # noqa: BLE001 - the exception is what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("make", NOT_TENSORS)
@pytest.mark.parametrize("dim", [0, None])
def test_non_tensor_input_raises_as_torch(name, make, dim):
    expected = _error(lambda: getattr(TF, name)(make(), dim=dim))
    got = _error(lambda: getattr(GF, name)(make(), dim=dim))
    assert expected is not None
    assert got == expected


def test_module_softmax_on_an_int_raises_attribute_error():
    expected = _error(lambda: torch.nn.Softmax(dim=1)(1))
    got = _error(lambda: tapegrad.nn.Softmax(dim=1)(1))
    assert got == expected == (AttributeError, "'int' object has no attribute 'softmax'")


class _HasSoftmax:
    """Duck-typed input: PyTorch's F.softmax calls its methods."""
    def dim(self):
        return 2

    def softmax(self, dim, dtype=None):
        return ("softmax", dim, dtype)

    def log_softmax(self, dim, dtype=None):
        return ("log_softmax", dim, dtype)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_object_with_the_method_is_called(name):
    obj = _HasSoftmax()
    assert getattr(GF, name)(obj, 0) == getattr(TF, name)(obj, 0) == (name, 0, None)
    assert getattr(GF, name)(obj, 1, dtype=tapegrad.float64) == (name, 1, tapegrad.float64)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        assert getattr(GF, name)(obj) == (name, 1, None)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_tensor_values_and_gradients_unchanged(name):
    x = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4]])
    g = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]])
    t = torch.tensor(x, requires_grad=True)
    a = tapegrad.tensor(x, requires_grad=True)
    tout = getattr(TF, name)(t, dim=1)
    aout = getattr(GF, name)(a, dim=1)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    assert aout.dtype == tapegrad.float64 and tuple(aout.shape) == (2, 3)
    tout.backward(torch.tensor(g))
    aout.backward(tapegrad.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12)
