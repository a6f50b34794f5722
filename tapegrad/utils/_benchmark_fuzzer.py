"""torch.utils.benchmark's Fuzzer: reproducible random benchmark inputs.

A `Fuzzer` draws named parameters (`FuzzedParameter`: log-uniform, uniform, or a dict of choices
that may alias another parameter, `ParameterAlias`), rejects draws that break its constraints or
a tensor's element / allocation limits, and builds each `FuzzedTensor` from them: allocated at
`size * steps`, sometimes laid out in a permuted (non-contiguous) order, then sliced by `steps`.
All choices come from one numpy RandomState seeded with `seed`, drawn in PyTorch's order, so a
given seed yields the same sizes, layouts and parameters as under PyTorch (the tensor values come
from tapegrad's own random stream, seeded from that state as PyTorch seeds its own).
"""
from __future__ import annotations as _annotations

import functools
import itertools
import operator
from typing import Any, Callable

import numpy as np

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named value drawn between minval and maxval ("loguniform" or "uniform"; integers when
    both bounds are ints), or from a {choice: probability} dict.  A strict parameter keeps its
    first draw while the Fuzzer redraws the others to satisfy the constraints."""

    def __init__(self, name: str, minval=None, maxval=None, distribution=None,
                 strict: bool = False) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._checked(distribution)
        self.strict = strict

    @property
    def name(self):
        return self._name

    def _checked(self, distribution):
        if isinstance(distribution, dict):
            if any(p < 0 for p in distribution.values()):
                raise AssertionError("Probabilities cannot be negative")
            if abs(sum(distribution.values()) - 1) > 1e-5:
                raise AssertionError("Distribution is not normalized")
            if self._minval is not None:
                raise AssertionError("When passing a custom distribution, 'minval' must be None")
            if self._maxval is not None:
                raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        elif distribution not in _DISTRIBUTIONS:
            raise AssertionError(f"Unknown distribution: {distribution}")
        return distribution

    def sample(self, state):
        """One draw from numpy RandomState `state`."""
        dist, lo, hi = self._distribution, self._minval, self._maxval
        if isinstance(dist, dict):
            keys = list(dist)
            return keys[state.choice(np.arange(len(keys)), p=tuple(dist.values()))]
        if dist == "uniform":
            if isinstance(lo, int) and isinstance(hi, int):
                return int(state.randint(low=lo, high=hi + 1))
            return state.uniform(low=lo, high=hi)
        # log-uniform: uniform in log2 space, truncated to an int and kept within the bounds
        value = int(2 ** state.uniform(low=None if lo is None else np.log2(lo),
                                       high=None if hi is None else np.log2(hi)))
        if lo is not None and value < lo:
            return lo
        if hi is not None and value > hi:
            return hi
        return value


class ParameterAlias:
    """A choice in a custom distribution that takes another parameter's value (chains allowed,
    cycles refused)."""

    def __init__(self, alias_to) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def _itemsize(dtype) -> int:
    from .. import finfo, iinfo, bool as bool_
    if dtype == bool_:
        return 1
    info = finfo(dtype) if (dtype.is_floating_point or dtype.is_complex) else iinfo(dtype)
    return int(info.bits / 8)


def _product(values, base=1) -> int:
    # Python ints: no overflow for huge candidate sizes (a numpy product could wrap negative)
    return functools.reduce(operator.mul, (int(v) for v in values), int(base))


class FuzzedTensor:
    """A tensor named `name` whose `size` (and optional `steps`) entries are ints or parameter
    names; see the module docstring for how it is built."""

    def __init__(self, name: str, size, steps=None, probability_contiguous: float = 0.5,
                 min_elements=None, max_elements=None, max_allocation_bytes=None,
                 dim_parameter=None, roll_parameter=None, dtype=None, cuda=False,
                 tensor_constructor: Callable | None = None) -> None:
        from .. import float32
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = float32 if dtype is None else dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self):
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        """Uniform [0, 1) values for floating and complex dtypes, integers in [1, 127) else."""
        from .. import rand, randint
        if dtype.is_floating_point or dtype.is_complex:
            return rand(size=size, dtype=dtype, device="cpu")
        return randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _shape(self, params):
        """(size, steps, allocated size) with parameter names replaced by their values, cut or
        padded with ones to the `dim_parameter` value when there is one."""
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def concrete(entries):
            values = tuple(params.get(e, e) for e in entries)[:dim]
            return values + (1,) * (dim - len(values))
        size, steps = concrete(self._size), concrete(self._steps or ())
        return size, steps, tuple(n * s for n, s in zip(size, steps))

    def satisfies_constraints(self, params) -> bool:
        size, _, allocated = self._shape(params)
        numel = _product(size)
        nbytes = _product(allocated, base=_itemsize(self._dtype))
        too_many = self._max_elements is not None and numel > self._max_elements
        too_few = self._min_elements is not None and self._min_elements > numel
        too_big = self._max_allocation_bytes is not None and nbytes > self._max_allocation_bytes
        return not (too_many or too_few or too_big)

    def _make_tensor(self, params, state):
        size, steps, allocated = self._shape(params)
        make = self._tensor_constructor or self.default_tensor_constructor
        raw = make(size=allocated, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            # lay the memory out in a random non-identity dimension order, same logical shape
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(order)).contiguous().permute(tuple(np.argsort(order)))
        tensor = raw[tuple(slice(0, n * s, s) for n, s in zip(size, steps))]
        return tensor, {"numel": int(tensor.numel()), "order": order, "steps": steps,
                        "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}


class Fuzzer:
    """Draws parameter sets and the tensors built from them; `take(n)` yields n triples
    (tensors, tensor_properties, params), the same for the same seed."""

    def __init__(self, parameters, tensors, constraints=None, seed=None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = self._flatten(parameters, FuzzedParameter)
        self._tensors = self._flatten(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        shared = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if shared:
            raise ValueError(f"Duplicate names in parameters and tensors: {shared}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _flatten(values, cls):
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v
                                                   for v in values))

    def take(self, n):
        from .. import manual_seed
        state = np.random.RandomState(self._seed)
        manual_seed(state.randint(low=0, high=2 ** 63, dtype=np.int64))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self):
        return self._rejections / self._total_generated if self._total_generated else 0.

    def _generate(self, state):
        kept = {}               # strict parameters: drawn once, kept through the redraws
        for _ in range(1000):
            params = {}
            for p in self._parameters:
                if p.strict and p.name in kept:
                    params[p.name] = kept[p.name]
                else:
                    params[p.name] = p.sample(state)
                    if p.strict:
                        kept[p.name] = params[p.name]
            params = self._resolve_aliases(params)
            self._total_generated += 1
            if all(f(params) for f in self._constraints) and \
                    all(t.satisfies_constraints(params) for t in self._tensors):
                return params
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            left = sum(isinstance(v, ParameterAlias) for v in params.values())
            if left == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = left
        return params
