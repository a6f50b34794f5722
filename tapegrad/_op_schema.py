"""Operator schemas, the strings torch.library speaks: ``mylib::scale(Tensor x, float s=2.,
*, bool b=False) -> Tensor``.

One job: read a schema string (`parse_schema`), write one from a Python function's annotations
(`infer_schema`, as torch.library.custom_op does), and print one as PyTorch prints its
FunctionSchema.  The grammar is the part of PyTorch's schema language custom operators use:
argument types (Tensor, int, SymInt, float, bool, str, Scalar, ScalarType, Device, Layout,
MemoryFormat, Generator, each optionally ``?`` and/or ``[]``), alias annotations (``Tensor(a!)``
marks an argument the op writes), defaults, ``*`` before keyword-only arguments, and one return
or a parenthesised tuple of them.
"""
from __future__ import annotations as _annotations

import dataclasses
import inspect
import re
import types
import typing

_BASE_TYPES = frozenset(("Tensor", "int", "SymInt", "float", "bool", "str", "Scalar",
                         "ScalarType", "Device", "Layout", "MemoryFormat", "Generator", "Any"))


@dataclasses.dataclass(frozen=True)
class Argument:
    name: str
    type: str                    # as written in the schema: "Tensor?", "SymInt[]" ...
    default: object = inspect.Parameter.empty
    kwarg_only: bool = False
    alias: str | None = None     # "a!" for Tensor(a!)

    @property
    def is_write(self) -> bool:
        return self.alias is not None and self.alias.endswith("!")

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor") and self.type.rstrip("?").endswith("[]")

    def __str__(self) -> str:
        kind = self.type
        if self.alias is not None:
            kind = f"Tensor({self.alias}){kind[len('Tensor'):]}"
        text = f"{kind} {self.name}" if self.name else kind
        if self.has_default:
            text += "=" + _format_default(self.default)
        return text


@dataclasses.dataclass(frozen=True)
class FunctionSchema:
    name: str                    # "mylib::scale" ("" for a schema given without a name)
    overload_name: str
    arguments: tuple
    returns: tuple

    def __str__(self) -> str:
        args, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            args.append(str(a))
        if len(self.returns) == 1 and not self.returns[0].type.startswith("("):
            ret = str(self.returns[0])
        else:
            ret = "(" + ", ".join(str(r) for r in self.returns) + ")"
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        return f"{name}({', '.join(args)}) -> {ret}"

    __repr__ = __str__


def _format_default(value) -> str:
    """A default as PyTorch prints it: floats with 17 significant digits ("2." for 2.0),
    strings in double quotes, lists as [1, 2]."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        text = "%.17g" % value
        return text if any(c in text for c in ".en") else text + "."
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_default(v) for v in value) + "]"
    return str(value)


# -- reading a schema string --------------------------------------------------------------------

def _schema_error(text: str, pos: int, what: str) -> RuntimeError:
    return RuntimeError(f"{what} here:\n{text}\n{' ' * pos}~ <--- HERE\n")


def parse_schema(text: str, *, name_required: bool = True) -> FunctionSchema:
    """`text` ("ns::name.overload(args) -> returns", or "(args) -> returns" when the name is
    given elsewhere) as a FunctionSchema; a RuntimeError naming the place it stops making sense,
    as PyTorch's schema parser."""
    s = text.strip()
    head, paren, _ = s.partition("(")
    if not paren:
        raise _schema_error(text, len(text), "expected ( but found 'eof'")
    head = head.strip()
    if name_required and not head:
        raise _schema_error(text, 0, "expected ident but found '('")
    name, _, overload = head.partition(".")
    depth, i = 0, s.index("(")
    for j in range(i, len(s)):
        depth += {"(": 1, ")": -1}.get(s[j], 0)
        if depth == 0:
            break
    else:
        raise _schema_error(text, len(s), "expected ) but found 'eof'")
    args_text, rest = s[i + 1:j], s[j + 1:].strip()
    if not rest.startswith("->"):
        raise _schema_error(text, j + 1, "expected 'arrow' but found " + (repr(rest[:1]) or "'eof'"))
    arguments, kwarg_only = [], False
    for piece in _split_top_level(args_text):
        if piece == "*":
            kwarg_only = True
            continue
        arguments.append(_parse_argument(piece, kwarg_only, text))
    ret_text = rest[2:].strip()
    if ret_text.startswith("("):
        returns = tuple(_parse_argument(p, False, text, returns=True)
                        for p in _split_top_level(ret_text[1:-1]))
    else:
        returns = (_parse_argument(ret_text, False, text, returns=True),)
    return FunctionSchema(name, overload, tuple(arguments), returns)


def _split_top_level(text: str) -> list:
    parts, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    last = text[start:].strip()
    if last:
        parts.append(last)
    return parts


_ARG = re.compile(r"^(?P<base>[A-Za-z]+)(?:\((?P<alias>[a-z0-9]+!?)\))?(?P<suffix>(?:\[[0-9]*\]|\?)*)"
                  r"(?:\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*))?(?:\s*=\s*(?P<default>.+))?$")


def _parse_argument(piece: str, kwarg_only: bool, text: str, returns: bool = False) -> Argument:
    m = _ARG.match(piece.strip())
    if m is None or m.group("base") not in _BASE_TYPES:
        where = text.find(piece)
        raise _schema_error(text, max(where, 0), f"Unknown type name '{piece.split()[0]}'"
                            if m is not None else f"expected a type but found {piece!r}")
    kind = m.group("base") + re.sub(r"\[[0-9]+\]", "[]", m.group("suffix") or "")
    if not returns and m.group("name") is None:
        raise _schema_error(text, text.find(piece) + len(piece), "expected ident but found ','")
    default = inspect.Parameter.empty
    if m.group("default") is not None:
        default = _parse_default(m.group("default").strip(), kind)
    return Argument(m.group("name") or "", kind, default, kwarg_only, m.group("alias"))


def _parse_default(text: str, kind: str):
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "\"'":
        return text[1:-1]
    if text.startswith("["):
        inner = text[1:-1].strip()
        return [_parse_default(t.strip(), kind.rstrip("?")[:-2]) for t in inner.split(",")] \
            if inner else []
    base = kind.rstrip("?").rstrip("[]")
    if base in ("float",) or any(c in text for c in ".eE") and base != "str":
        return float(text)
    try:
        return int(text)
    except ValueError:
        return text


# -- writing a schema from annotations (torch.library.infer_schema) ---------------------------

def _annotation_type(annotation, tensor_cls, where: str) -> str:
    """The schema type of a Python annotation (PyTorch's table: int -> SymInt, Number ->
    Scalar, list[int] -> SymInt[], Optional[X] -> X?)."""
    from . import _core
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return _annotation_type(inner, tensor_cls, where) + "?"
    if origin in (list, typing.List, tuple, typing.Sequence) or \
            (origin is not None and getattr(origin, "__name__", "") == "Sequence"):
        if len(args) >= 1:
            return _annotation_type(args[0], tensor_cls, where) + "[]"
    simple = {int: "SymInt", float: "float", bool: "bool", str: "str",
              _core.dtype: "ScalarType"}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, tensor_cls):
        return "Tensor"
    name = getattr(annotation, "__name__", str(annotation))
    if name in ("device",):
        return "Device"
    if annotation is typing.Union[int, float, bool] or name == "Number" or \
            (origin in (typing.Union, types.UnionType) and set(args) <= {int, float, bool, complex}):
        return "Scalar"
    raise ValueError(f"infer_schema(func): Parameter {where} has unsupported type {annotation}.")


def infer_schema(fn, *, mutates_args, op_name: str | None = None) -> str:
    """The schema string of fn's signature ("(Tensor x, float s=2.) -> Tensor"), its arguments
    named in `mutates_args` marked as written ("Tensor(a0!) x"); raises PyTorch's ValueError for an
    argument without a type annotation."""
    from .tensor import Tensor
    sig = inspect.signature(fn)
    if mutates_args == "unknown":
        mutates = {name for name, p in sig.parameters.items()}
    else:
        if isinstance(mutates_args, str):
            raise ValueError("mutates_args must be a tuple, list or set of argument names, or "
                             "'unknown'")
        mutates = set(mutates_args)
    missing = mutates - set(sig.parameters)
    if missing:
        raise ValueError(f"infer_schema(func): {sorted(missing)[0]} in mutates_args were not "
                         f"found in the custom op's signature. mutates_args should contain the "
                         f"names of all args that the custom op mutates, or just the string "
                         f"'unknown' if you don't know.")
    args, star = [], False
    for idx, (name, p) in enumerate(sig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): Parameters of type {p.kind} are not "
                             f"supported. Got func with signature {sig})")
        if p.annotation is p.empty:
            raise ValueError(f"infer_schema(func): Parameter {name} must have a type "
                             f"annotation. Got func with signature {sig})")
        kind = _annotation_type(_resolve(p.annotation, fn), Tensor, name)
        if p.kind == p.KEYWORD_ONLY and not star:
            args.append("*")
            star = True
        text = kind
        if name in mutates and kind.startswith("Tensor"):
            text = f"Tensor(a{idx}!){kind[len('Tensor'):]}"
        elif name in mutates and mutates_args != "unknown":
            raise ValueError(f"infer_schema(func): Parameter {name} is in mutable_args but only "
                             f"Tensors or collections of Tensors can be mutated Got func with "
                             f"signature {sig})")
        text += f" {name}"
        if p.default is not p.empty:
            # (written by str(), as PyTorch's infer_schema: "float n=1.0", where a parsed
            # schema prints "1.")
            d = p.default
            text += "=" + (str(d) if d is None or isinstance(d, (int, float, bool)) else
                           f'"{d}"' if isinstance(d, str) or type(d).__name__ == "device" else
                           str(d).removeprefix("torch."))
        args.append(text)
    ret = _resolve(sig.return_annotation, fn)
    if ret is sig.empty:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. Please "
                         f"add one. Got func with signature {sig})")
    returns = _return_text(ret, Tensor)
    prefix = op_name or ""
    return f"{prefix}({', '.join(args)}) -> {returns}"


def _resolve(annotation, fn):
    """A string annotation (from `from __future__ import annotations`) evaluated in fn's module."""
    if isinstance(annotation, str):
        return eval(annotation, getattr(fn, "__globals__", {}))     # noqa: S307 (user's own)
    return annotation


def _return_text(ret, tensor_cls) -> str:
    if ret is None or ret is type(None):
        return "()"
    if typing.get_origin(ret) is tuple:
        return "(" + ", ".join(_annotation_type(r, tensor_cls, "return") for r in
                               typing.get_args(ret)) + ")"
    return _annotation_type(ret, tensor_cls, "return")
