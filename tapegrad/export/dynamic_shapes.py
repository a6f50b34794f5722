"""torch.export.dynamic_shapes: Dim (a named size with a range), Dim.AUTO / Dim.STATIC /
Dim.DYNAMIC, dims(), and the checks export makes of `dynamic_shapes` against the example inputs
(PyTorch's errors and messages).  A dynamic dim gets PyTorch's symbol name, `s<N>` with N from
the sha256 of its source `L['x'].size()[0]`, so printed programs read as PyTorch's."""
from __future__ import annotations as _annotations

import hashlib
from .._torch_names import TorchNamedClass as _TorchNamedClass

__all__ = ["Dim", "DimHint", "dims", "ShapeSpec", "resolve"]

_SUGGEST = ("\n\nThe error above occurred when calling torch.export.export. If you would like to "
            "view some more information about this error, and get a list of all other errors that "
            "may occur in your export call, you can replace your `export()` call with "
            "`draft_export()`.")


class DimHint:
    """Dim.AUTO, Dim.STATIC, Dim.DYNAMIC."""

    def __init__(self, kind):
        self.kind = kind

    def __repr__(self):
        return f"DimHint({self.kind})"


class Dim(metaclass=_TorchNamedClass):
    """A dynamic size named `name`, allowed in [min, max]; the same Dim on several inputs says
    those sizes are equal."""

    AUTO = DimHint("AUTO")
    STATIC = DimHint("STATIC")
    DYNAMIC = DimHint("DYNAMIC")

    def __init__(self, name, *, min=None, max=None):
        if min is not None and max is not None and min > max:
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        if name.isnumeric():
            raise AssertionError(f"Dim name must be a valid identifier, got {name}")
        self.__name__ = name
        self.min = 0 if min is None else min
        self.max = None if max is None else max

    def __repr__(self):
        upper = "int_oo" if self.max is None else self.max
        return f"Dim('{self.__name__}', min={self.min}, max={upper})"


def dims(*names, min=None, max=None):
    """One Dim per name, all with the same range."""
    return tuple(Dim(name, min=min, max=max) for name in names)


class ShapeSpec:
    """What export learnt from `dynamic_shapes`: each dynamic (input, dim) with its symbol and
    range, and the symbol of each dynamic example size (for the printed annotations)."""

    def __init__(self):
        self.dynamic = {}        # (input name, dim) -> (symbol, lower, upper or None)
        self.sizes = {}          # symbol -> (example size, the other size export also runs, Dim name)
        self.range_constraints = {}
        self.sources = {}        # symbol -> (its first source, Dim name, the Dim or hint)

    def other_shape(self, name, shape):
        """`shape` of input `name` with each dynamic dim at its other size (see _tracer.py)."""
        return [self.sizes[self.dynamic[(name, d)][0]][1] if (name, d) in self.dynamic else size
                for d, size in enumerate(shape)]

    def expression(self, size, other):
        """The symbolic size a dim of sizes (example, other) has: "s77", "2*s77", "s77 + 1"."""
        for symbol, (example, moved, _name) in self.sizes.items():
            delta = moved - example
            if (other - size) % delta:
                continue
            k = (other - size) // delta
            c = size - k * example
            if k == 0:
                continue
            term = str(symbol) if k == 1 else f"{k}*{symbol}"
            return term if c == 0 else f"{term} + {c}" if c > 0 else f"{term} - {-c}"
        return "?"

    def check_guard(self, symbol, relation, bound, outcome):
        """`symbol <relation> bound` was `outcome` on the example: the range of sizes that
        agree must hold the declared range, or the code constrained the dim (PyTorch's error)."""
        import math
        source, name, dim = self.sources[symbol]
        declared = self.range_constraints[symbol]
        lower, upper = max(declared.lower, 2), math.inf if declared.upper is None else declared.upper
        keep_lower, keep_upper = lower, upper
        holds = {">": (bound + 1, math.inf), ">=": (bound, math.inf), "<": (-math.inf, bound - 1),
                 "<=": (-math.inf, bound)}.get(relation)
        if holds is None:
            return
        if not outcome:              # the negation: x > b false means x <= b
            holds = {">": (-math.inf, bound), ">=": (-math.inf, bound - 1),
                     "<": (bound, math.inf), "<=": (bound + 1, math.inf)}[relation]
        lower, upper = max(lower, holds[0]), min(upper, holds[1])
        if (lower, upper) == (keep_lower, keep_upper) or name is None:
            return
        from .._dynamo.exc import UserError, UserErrorType
        if declared.lower > 0 and declared.upper is not None:
            specified = f" in the specified range {declared.lower} <= {name} <= {declared.upper}"
        elif declared.upper is not None:
            specified = f" in the specified range {name} <= {declared.upper}"
        elif declared.lower > 0:
            specified = f" in the specified range {name} >= {declared.lower}"
        else:
            specified = ""
        shown = "IntInfinity()" if upper == math.inf else upper
        fix = ", ".join(f"{k}={v}" for k, v in (("min", lower if lower > 2 else None),
                                                ("max", None if upper == math.inf else upper)) if v is not None)
        raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                        f"Constraints violated ({name})! For more information, run with "
                        f"TORCH_LOGS=\"+dynamic\".\n  - Not all values of {name} = {source}{specified} "
                        f"satisfy the generated guard {lower} <= {source} and {source} <= {shown}\n"
                        f"Suggested fixes:\n  {name} = Dim('{name}', {fix})" + _SUGGEST)

    def specialised_error(self):
        """PyTorch's UserError for code that made the dynamic dims constants."""
        return _specialised_error([(n, e) for e, _o, n in self.sizes.values() if n is not None])


class Symbol(str):
    """A size symbol (`s77`): prints bare, as sympy's symbols do."""

    def __repr__(self):
        return str(self)


class ValueRanges:
    """A symbol's range, printed as PyTorch's `VR[2, 64]` (int_oo: unbounded)."""

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def __repr__(self):
        return f"VR[{self.lower}, {'int_oo' if self.upper is None else self.upper}]"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, ValueRanges) and (self.lower, self.upper) == (other.lower, other.upper)


def _symbol(source, used):
    n = int(hashlib.sha256(source.encode()).hexdigest(), 16) % 100
    while n in used:
        n += 1
    used.add(n)
    return f"s{n}"


def resolve(dynamic_shapes, names, values):
    """The ShapeSpec of `dynamic_shapes` (a dict by input name, or a tuple/list by position) for
    the inputs `names` with example `values`; PyTorch's UserError / ConstraintViolationError for
    specs that do not fit."""
    from .._dynamo.exc import UserError, UserErrorType
    from ..fx.experimental.symbolic_shapes import ConstraintViolationError
    spec = ShapeSpec()
    if dynamic_shapes is None:
        return spec
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in names]
        if unknown:
            raise UserError(UserErrorType.INVALID_INPUT,
                            "When `dynamic_shapes` is specified as a dict, its top-level keys must "
                            f"be the arg names {list(names)} of `inputs`, but here they are "
                            f"{list(dynamic_shapes)}. Alternatively, you could also ignore arg names "
                            "entirely and specify `dynamic_shapes` as a list/tuple matching `inputs`. "
                            "For more information about this error, see: https://pytorch.org/docs/"
                            "main/generated/exportdb/index.html#dynamic-shapes-validation" + _SUGGEST)
        per_input = [dynamic_shapes.get(n) for n in names]
    else:
        per_input = list(dynamic_shapes)
        if len(per_input) != len(names):
            raise UserError(UserErrorType.INVALID_INPUT,
                            f"dynamic_shapes has {len(per_input)} entries, but inputs has "
                            f"{len(names)}" + _SUGGEST)
    used = set()
    by_dim = {}                       # a Dim -> its symbol (equal Dims, equal sizes)
    # inputs sharing a Dim share one symbol: PyTorch keeps the lowest-numbered of theirs
    sources = {}
    for name, shape in zip(names, per_input):
        for d, dim in (dict(enumerate(shape)) if isinstance(shape, (tuple, list)) else shape or {}).items():
            if isinstance(dim, Dim):
                sources.setdefault(dim, []).append(f"L['{name}'].size()[{d}]")
            elif isinstance(dim, DimHint) and dim is not Dim.STATIC:
                # automatic dims of one size are taken as one (PyTorch unifies the dims its
                # ops equate, which in practice are those)
                size = values[names.index(name)].shape[d]
                sources.setdefault(("auto", size), []).append(f"L['{name}'].size()[{d}]")
    specialised = []
    for name, value, shape in zip(names, values, per_input):
        if shape is None:
            continue
        if isinstance(shape, (tuple, list)):
            shape = dict(enumerate(shape))
        for d, dim in shape.items():
            if dim is None or dim is Dim.STATIC:
                continue
            size = value.shape[d]
            if isinstance(dim, DimHint):
                lower, upper, dim_name = 2, None, None
            else:
                lower, upper, dim_name = dim.min, dim.max, dim.__name__
            if size in (0, 1):               # PyTorch specialises sizes 0 and 1
                if dim_name is not None:
                    specialised.append((dim_name, size))
                continue
            if size < lower or (upper is not None and size > upper):
                raise ConstraintViolationError(f"{size} not in range [{lower}, "
                                               f"{'int_oo' if upper is None else upper}]" + _SUGGEST)
            key = dim if dim_name is not None else ("auto", size)
            symbol = by_dim.get(key)
            if symbol is None:
                candidates = sources.get(key, [f"L['{name}'].size()[{d}]"])
                source = min(candidates, key=lambda c: int(hashlib.sha256(c.encode()).hexdigest(), 16) % 100)
                symbol = by_dim[key] = Symbol(_symbol(source, used))
                spec.range_constraints[symbol] = ValueRanges(lower, upper)
                spec.sources[symbol] = (f"L['{name}'].size()[{d}]", dim_name, dim)
                other = size + 1 if upper is None or size + 1 <= upper else size - 1
                spec.sizes[symbol] = (size, other, dim_name)
            spec.dynamic[(name, d)] = (symbol, lower, upper)
    if specialised:
        raise _specialised_error(specialised)
    return spec


def _specialised_error(specialised):
    from .._dynamo.exc import UserError, UserErrorType
    lines = "\n".join(f"  - You marked {n} as dynamic but your code specialized it to be a "
                      f"constant ({s}). If you're using mark_dynamic, either remove it or use "
                      "maybe_mark_dynamic. If you're using Dim.DYNAMIC, replace it with either "
                      "Dim.STATIC or Dim.AUTO." for n, s in specialised)
    fixes = "\n".join(f"  {n} = {s}" for n, s in specialised)
    names = ", ".join(n for n, _s in specialised)
    return UserError(UserErrorType.CONSTRAINT_VIOLATION,
                     f"Constraints violated ({names})! For more information, run with "
                     f"TORCH_LOGS=\"+dynamic\".\n{lines}\nSuggested fixes:\n{fixes}" + _SUGGEST)
