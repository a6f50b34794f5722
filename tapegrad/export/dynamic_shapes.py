"""torch.export.dynamic_shapes: Dim (a named size with a range), Dim.AUTO / Dim.STATIC /
Dim.DYNAMIC, dims(), and the checks export makes of `dynamic_shapes` against the example inputs
(PyTorch's errors and messages).  A dynamic dim gets PyTorch's symbol name, `s<N>` with N from
the sha256 of its source `L['x'].size()[0]`, so printed programs read as PyTorch's."""
from __future__ import annotations as _annotations

import hashlib

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


class Dim:
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
            term = symbol if k == 1 else f"{k}*{symbol}"
            return term if c == 0 else f"{term} + {c}" if c > 0 else f"{term} - {-c}"
        return "?"

    def specialised_error(self):
        """PyTorch's UserError for code that made the dynamic dims constants."""
        return _specialised_error([(n, e) for e, _o, n in self.sizes.values() if n is not None])


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
            key = dim if dim_name is not None else (name, d)
            symbol = by_dim.get(key)
            if symbol is None:
                symbol = by_dim[key] = _symbol(f"L['{name}'].size()[{d}]", used)
                spec.range_constraints[symbol] = f"VR[{lower}, {'int_oo' if upper is None else upper}]"
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
