"""Extending torch with __torch_function__ (PyTorch docs, notes/extending): ScalarTensor, a
tensor-like with a table of implementations, and MetadataTensor carrying a dict through ops."""

import functools
import torch

HANDLED_FUNCTIONS = {}

class ScalarTensor(object):
    def __init__(self, N, value):
        self._N = N
        self._value = value

    def __repr__(self):
        return "ScalarTensor(N={}, value={})".format(self._N, self._value)

    def tensor(self):
        return self._value * torch.eye(self._N)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func not in HANDLED_FUNCTIONS or not all(
            issubclass(t, (torch.Tensor, ScalarTensor)) for t in types
        ):
            return NotImplemented
        return HANDLED_FUNCTIONS[func](*args, **kwargs)

def implements(torch_function):
    def decorator(func):
        functools.update_wrapper(func, torch_function)
        HANDLED_FUNCTIONS[torch_function] = func
        return func
    return decorator

@implements(torch.mean)
def mean(input):
    return float(input._value) / input._N

def ensure_tensor(data):
    if isinstance(data, ScalarTensor):
        return data.tensor()
    return torch.as_tensor(data)

@implements(torch.add)
def add(input, other):
    try:
        if input._N == other._N:
            return ScalarTensor(input._N, input._value + other._value)
        else:
            raise ValueError("Shape mismatch!")
    except AttributeError:
        return torch.add(ensure_tensor(input), ensure_tensor(other))

d = ScalarTensor(5, 2)
print(d)
print(d.tensor())
print(torch.mean(d))
print(torch.add(d, d))
s = ScalarTensor(2, 2)
print(torch.add(s, torch.tensor([[1, 2], [3, 4]])))
try:
    torch.mul(s, 3)
except TypeError as e:
    print("TypeError:", str(e).split("\n")[0][:60])
print(mean.__name__, mean.__doc__ is not None)
print(torch.overrides.has_torch_function((d,)))
print(torch.overrides.is_tensor_like(d))
print(torch.overrides.is_tensor_like(torch.tensor(1.)))
print(torch.overrides.is_tensor_like(3))


class MetadataTensor(object):
    def __init__(self, data, metadata=None, **kwargs):
        self._t = torch.as_tensor(data, **kwargs)
        self._metadata = metadata

    def __repr__(self):
        return "Metadata:\n{}\n\ndata:\n{}".format(self._metadata, self._t)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        metadatas = tuple(a._metadata for a in args if hasattr(a, '_metadata'))
        args = [getattr(a, '_t', a) for a in args]
        assert len(metadatas) > 0
        ret = func(*args, **kwargs)
        return MetadataTensor(ret, metadata=metadatas[0])

metadata = {'owner': 'Ministry of Silly Walks'}
m = MetadataTensor([[1, 2], [3, 4]], metadata=metadata)
t = torch.tensor([[1, 2], [1, 2]])
print(torch.add(t, m))
print(torch.mul(m, t))
print(torch.sum(m))
r = torch.matmul(m, t)
print(type(r).__name__, r._metadata, r._t)
print(torch.cat([m._t, t]).shape)
print(torch.stack([t, t], dim=0).shape)
