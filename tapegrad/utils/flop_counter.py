"""torch.utils.flop_counter: FlopCounterMode counts the floating-point operations of the matrix
products, convolutions and attention a block runs, forward and backward, per module.

PyTorch counts the aten ops its dispatcher runs (aten.mm, aten.addmm, aten.bmm, aten.baddbmm,
aten.convolution, aten.convolution_backward).  On the CPU scaled_dot_product_attention runs
either PyTorch's flash kernel, which its registry does not count, or its math kernel, two matmuls
(aten.bmm, or aten.mm for 2-d operands): tapegrad/nn/_attention.py makes the same choice and
opens the chosen kernel's event, and only the math kernel's is counted.  tapegrad runs no aten decomposition, so the mode listens to the profiler's op events
(tapegrad/profiler.py: every public call, with its positional operands and its result) and counts
each counted call as the aten op PyTorch runs for it: torch.matmul of a 3-d and a 2-d tensor is
one aten.mm over the folded rows, F.linear with a bias an aten.addmm, and so on.  An op called
inside a counted one (tapegrad's own implementation of it) is not counted again.

A backward is counted when the op's node runs while the mode is active, as the products PyTorch's
backward runs: one per operand that requires grad (mm's two gradients are two aten.mm), under
the modules a ModuleTracker (utils/module_tracker.py) says are running then, as PyTorch's.
"""
from __future__ import annotations as _annotations

import math
import threading
import warnings
from collections import defaultdict

from .. import _profiler_flops, grad_mode as _grad_mode, profiler as _profiler
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode"]


class _AtenOp:
    """The key a count is kept under: prints as PyTorch's op packet does (aten.mm)."""

    __slots__ = ("__name__",)

    def __init__(self, name):
        self.__name__ = name

    def __str__(self):
        return f"aten.{self.__name__}"

    def __repr__(self):
        return f"<OpOverloadPacket(op='aten.{self.__name__}')>"

    def __eq__(self, other):
        return str(other) == str(self)

    def __hash__(self):
        return hash(str(self))


_OPS = {name: _AtenOp(name) for name in ("mm", "addmm", "bmm", "baddbmm", "convolution",
                                         "convolution_backward")}


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else None


def _needs_grad(x) -> bool:
    return bool(getattr(x, "requires_grad", False))


def _matmul_counts(a, b, op=None):
    """(op, flops of one product) of a product of shapes a and b, 2-d or 3-d (mm, bmm, addmm,
    baddbmm: `op` names it) or a matmul PyTorch folds into one mm over a's rows."""
    if len(b) == 2:
        rows = math.prod(a[:-1]) if len(a) > 1 else 1
        return op or "mm", 2 * rows * a[-1] * b[-1]
    a = (1, *a) if len(a) == 1 else a
    batch = math.prod(_profiler_flops._broadcast(a[:-2], b[:-2]))
    return op or "bmm", 2 * batch * a[-2] * a[-1] * b[-1]


class _Operand:
    """What PyTorch's matmul reads of an operand to choose its kernel: shape, strides, and
    whether it requires grad."""

    __slots__ = ("shape", "strides", "requires_grad")

    def __init__(self, shape, strides, requires_grad):
        self.shape, self.strides, self.requires_grad = tuple(shape), tuple(strides), requires_grad

    @classmethod
    def of(cls, tensor):
        return cls(tensor.shape, tensor.stride(), tensor.requires_grad)

    @classmethod
    def contiguous(cls, shape, requires_grad):
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= max(size, 1)
        return cls(shape, reversed(strides), requires_grad)

    def mT(self):
        return _Operand((*self.shape[:-2], self.shape[-1], self.shape[-2]),
                        (*self.strides[:-2], self.strides[-1], self.strides[-2]),
                        self.requires_grad)


def _folds(a, b):
    """PyTorch's matmul should_fold: whether a product of a >= 3-d operand with a 1-d or 2-d
    one runs as one mm (or mv) over the big one's folded rows rather than as a bmm: always when
    the small one requires grad (its gradient then stays small), never when the left operand is
    2-d (the result would need a transposed copy), else when the big one's leading dims fold
    without a copy."""
    big, small = (a, b) if len(a.shape) >= len(b.shape) else (b.mT(), a)
    if not (len(big.shape) >= 3 and len(small.shape) <= 2):
        return False
    if small.requires_grad:
        return True
    if len(a.shape) == 2:
        return False
    if math.prod(big.shape) == 0:
        return True
    return all(big.strides[i] == big.strides[i + 1] * big.shape[i + 1]
               for i in range(len(big.shape) - 2))


def _matmul_product(a, b):
    """(op, flops) of matmul(a, b) as PyTorch dispatches it (a, b: _Operand): dot and mv count
    nothing (op None); 2-d products and folded ones are one mm, the rest one bmm over the
    broadcast batch."""
    da, db = len(a.shape), len(b.shape)
    if db == 1 and da <= 2 or (da, db) == (1, 1):
        return None, 0                                  # (dot, mv)
    if da <= 2 and db == 2:
        return _matmul_counts(a.shape, b.shape)         # (mm; a 1-d a as one row)
    if _folds(a, b):
        if min(da, db) == 1:
            return None, 0                              # (mv over the folded rows)
        if da >= db:
            return _matmul_counts(a.shape, b.shape)
        return "mm", 2 * math.prod(b.shape[:-2]) * b.shape[-1] * a.shape[0] * a.shape[1]
    a_shape = (1, *a.shape) if da == 1 else a.shape
    b_shape = (*b.shape, 1) if db == 1 else b.shape
    return _matmul_counts(a_shape, b_shape, "bmm")


def _counts(name, operands, result):
    """[(op, flops)] of the forward and [(op, flops, operand)] of the backward (one product per
    operand that requires grad) of the public call `name`, or None when it counts nothing."""
    if name == "aten::einsum":
        if len(operands) == 2 and isinstance(operands[1], (list, tuple)):
            operands = (operands[0], *operands[1])      # (einsum(equation, [a, b]))
        return _einsum_counts(operands[0], operands[1:])
    shapes = [_shape(x) for x in operands]
    if len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
        return None
    out = _shape(result)
    if name in ("aten::mm", "aten::matmul", "aten::bmm"):
        a, b = shapes[0], shapes[1]
        if not a or not b:
            return None
        if name == "aten::matmul":
            op, flops = _matmul_product(_Operand.of(operands[0]), _Operand.of(operands[1]))
        else:
            op, flops = _matmul_counts(a, b)
        if op is None:
            return None
        backward = "mm" if op == "mm" else "bmm"
        return [(op, flops)], [(backward, flops, operands[0]), (backward, flops, operands[1])]
    if name in ("aten::addmm", "aten::baddbmm"):
        if len(shapes) < 3 or shapes[2] is None:
            return None
        a, b = shapes[1], shapes[2]
        op, flops = _matmul_counts(a, b, name[6:])
        backward = "mm" if op == "addmm" else "bmm"
        return [(op, flops)], [(backward, flops, operands[1]), (backward, flops, operands[2])]
    if name == "aten::linear":
        x, w = shapes[0], shapes[1]
        if not x or len(w) != 2:
            return None     # (a 1-d weight: a dot product)
        flops = 2 * math.prod(x[:-1]) * x[-1] * w[0]
        bias = operands[2] if len(operands) > 2 else None
        # PyTorch's linear runs addmm for a 2-d input with a bias, and for a contiguous input of
        # another rank with a 1-d bias (its rows folded); any other input goes through matmul
        # and then adds the bias: mm
        fused = bias is not None and (len(x) == 2 or (operands[0].is_contiguous()
                                                      and bias.dim() == 1))
        op = "addmm" if fused else _matmul_product(_Operand.of(operands[0]),
                                                   _Operand.of(operands[1]).mT())[0]
        if op is None:
            return None
        backward = "mm" if op == "addmm" else op
        return ([(op, flops)],
                [(backward, flops, operands[0]), (backward, flops, operands[1])])
    if name.startswith("aten::conv") and out is not None:
        x, w = shapes[0], shapes[1]
        channel = len(x) - len(w) + 1        # 1 batched, 0 unbatched
        if name.startswith("aten::conv_transpose"):
            flops = 2 * math.prod(x) * math.prod(w[1:])
            groups = out[channel] // w[1]        # (weight: in, out / groups, *kernel)
        elif name[-2:] in ("1d", "2d", "3d"):
            flops = 2 * math.prod(out) * math.prod(w[1:])
            groups = x[channel] // w[1]          # (weight: out, in / groups, *kernel)
        else:
            return None
        # PyTorch counts the weight's gradient as one convolution over all the input channels
        # (its formula transposes batch and channels and leaves the groups out): `groups` times
        # the forward's products; the input's gradient as many as the forward.
        return ([("convolution", flops)],
                [("convolution_backward", flops, operands[0]),
                 ("convolution_backward", flops * groups, operands[1])])
    if name == "aten::_scaled_dot_product_attention_math" and len(shapes) >= 3 and shapes[2]:
        # PyTorch's math kernel: two matmuls, scores = (q * scale) k^T and weights v, each run
        # as matmul runs (bmm; mm for 2-d operands or a 2-d key/value).  Its flash kernel, which
        # the event of aten::_scaled_dot_product_flash_attention_for_cpu stands for, counts 0
        q, k, v = shapes[:3]
        if len(k) < 2 or not q:
            return None
        query, key, value = operands[:3]
        # (the kernel scales q and k^T first: new tensors, q's contiguous, k^T's strided as
        # k^T; the softmax's weights are contiguous; each requires grad as its source does)
        recording = _grad_mode.is_grad_enabled()
        scaled_q = _Operand.contiguous(q, recording and _needs_grad(query))
        scaled_kt = _Operand(k, key.stride(), recording and _needs_grad(key)).mT()
        scores_op, scores = _matmul_product(scaled_q, scaled_kt)
        scores_shape = (*_profiler_flops._broadcast(q[:-2], k[:-2]), q[-2] if len(q) > 1 else 1,
                        k[-2])
        weights_operand = _Operand.contiguous(scores_shape, scaled_q.requires_grad
                                              or scaled_kt.requires_grad)
        mixed_op, mixed = _matmul_product(weights_operand, _Operand.of(value))
        if scores_op is None or mixed_op is None:
            return None
        # the backward's products: the weights' and v's gradients (mixed), q's and k's (scores)
        weights = _needs_grad(query) or _needs_grad(key)
        return ([(scores_op, scores), (mixed_op, mixed)],
                [(mixed_op, mixed, weights), (mixed_op, mixed, value),
                 (scores_op, scores, query), (scores_op, scores, key)])
    return None


def _einsum_labels(equation, shapes):
    """(each operand's labels, the output's labels, label -> size) of an einsum equation; the
    dims an ellipsis covers get labels of their own (counted from the right, broadcast)."""
    inputs, arrow, output = equation.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        return None
    sizes, labelled, ellipsis = {}, [], 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            head, _, tail = term.partition("...")
            covered = len(shape) - len(head) - len(tail)
            ellipsis = max(ellipsis, covered)
            labels = [*head, *(f"...{covered - i}" for i in range(covered)), *tail]
        else:
            labels = list(term)
        if len(labels) != len(shape):
            return None
        for label, size in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), size)
        labelled.append(labels)
    dots = [f"...{ellipsis - i}" for i in range(ellipsis)]
    if arrow:
        head, _, tail = output.partition("...")
        out = [*head, *(dots if "..." in output else []), *tail]
    else:       # (implicit output: the labels used once, sorted, after the ellipsis' dims)
        used = [label for labels in labelled for label in labels if not label.startswith("...")]
        out = dots + sorted(label for label in set(used) if used.count(label) == 1)
    return labelled, out, sizes


def _einsum_counts(equation, operands):
    """PyTorch's einsum contracts its operands left to right, each pair with one bmm over the
    dims both share and no later operand or the output needs (2 * batch * rows * contracted *
    columns FLOPs), or with a mul (not counted) when they share none such; a dim only one side
    has and nothing later needs is summed out first."""
    if not isinstance(equation, str) or len(operands) < 2:
        return None
    found = _einsum_labels(equation, [_shape(x) or () for x in operands])
    if found is None:
        return None
    labelled, out, sizes = found
    forward, backward = [], []
    current, needs = labelled[0], _needs_grad(operands[0])
    for k in range(1, len(labelled)):
        later = set(out).union(*labelled[k + 1:])
        other, other_needs = labelled[k], _needs_grad(operands[k])
        left = [d for d in dict.fromkeys(current) if d in later or d in other]
        right = [d for d in dict.fromkeys(other) if d in later or d in left]
        contracted = [d for d in left if d in right and d not in later]
        if contracted:
            flops = 2 * math.prod(sizes[d] for d in dict.fromkeys(left + right))
            forward.append(("bmm", flops))
            backward += [("bmm", flops, needs), ("bmm", flops, other_needs)]
        current = [d for d in dict.fromkeys(left + right) if d not in contracted]
        needs = needs or other_needs
    return (forward, backward) if forward else None


_COUNTED = frozenset(("aten::einsum", "aten::mm", "aten::matmul", "aten::bmm", "aten::addmm", "aten::baddbmm",
                      "aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d",
                      "aten::conv_transpose1d", "aten::conv_transpose2d",
                      "aten::conv_transpose3d", "aten::_scaled_dot_product_attention_math"))

# Ops PyTorch runs as one kernel its registry has no formula for: they count nothing, nor do the
# counted ops tapegrad's composition of them calls (F.bilinear is PyTorch's _trilinear; the
# inference fast paths of MultiheadAttention and TransformerEncoderLayer, and attention's CPU
# flash kernel, are fused kernels: their events come from tapegrad/_profiling.kernel_event).
_UNCOUNTED_KERNELS = frozenset(("aten::bilinear", "aten::_native_multi_head_attention",
                                "aten::_transformer_encoder_layer_fwd",
                                "aten::_scaled_dot_product_flash_attention_for_cpu"))

_BACKWARD = "backward"      # (the marker of a backward node's event on a listener's stack)


def get_suffix_str(number):
    """The unit of the table's FLOP column for a total of `number`: '', K, M, B or T."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


_SUFFIXES = ["", "K", "M", "B", "T"]


def convert_num_with_suffix(number, suffix):
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}" + suffix


def convert_to_percent_str(num, denom) -> str:
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _table(rows, header, align):
    """rows as the `tabulate` package's "simple" format lays them out (the one PyTorch prints):
    cells stripped of surrounding blanks (tabulate 0.10 does, whatever PyTorch asks), each column
    as wide as its widest cell or its header plus 2, columns two spaces apart."""
    rows = [[cell.strip() for cell in row] for row in rows]
    for i in range(len(header)):
        # a column of numbers only is printed as numbers (tabulate's "g"): "4960.000" as 4960
        try:
            numbers = [float(row[i]) for row in rows]
        except ValueError:
            continue
        for row, number in zip(rows, numbers):
            row[i] = format(number, "g")
    widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.ljust(w) if a == "left" else c.rjust(w)
                         for c, w, a in zip(cells, widths, align)).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in rows])


class FlopCounterMode:
    """Count the FLOPs of the matrix products, convolutions and attention run inside a `with`
    block (forward and backward), per module (``get_flop_counts()``), and print a table of them
    at the end (``display=True``, modules down to ``depth``)."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None):
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        if custom_mapping:
            raise NotImplementedError("FlopCounterMode(custom_mapping=...): tapegrad counts "
                                      "only the ops it knows the formulas of")
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self._listener = None
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        """{module name: {op: flops}}: "Global" for everything, then each module's own."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        """The table display=True prints: Module, FLOP, % Total, down to `depth` modules."""
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = get_suffix_str(total)
        global_subsumed = False

        def rows_of(module, indent):
            nonlocal global_subsumed
            counts = self.flop_counts[module]
            flops = sum(counts.values())
            global_subsumed |= flops >= total
            pad = " " * indent
            return [[pad + module, convert_num_with_suffix(flops, suffix),
                     convert_to_percent_str(flops, total)]] + [
                [pad + " - " + str(op), convert_num_with_suffix(n, suffix),
                 convert_to_percent_str(n, total)] for op, n in counts.items()]

        rows = []
        for module in sorted(self.flop_counts):
            if module == "Global" or module.count(".") + 1 > depth:
                continue
            rows.extend(rows_of(module, module.count(".")))
        # "Global" is shown only when some FLOPs ran outside every module shown
        if "Global" in self.flop_counts and not global_subsumed:
            for row in rows:
                row[0] = " " + row[0]
            rows = rows_of("Global", 0) + rows
        if not rows:
            rows = [["Global", "0", "0%"]]
        return _table(rows, ["Module", "FLOP", "% Total"], ("left", "right", "right"))

    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self._listener = _Listener(self, self.mod_tracker)
        self._listener.start()
        return self

    def __exit__(self, *exc):
        self._listener.stop()
        self._listener = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _add(self, parents, op, flops):
        for parent in set(parents):
            self.flop_counts[parent][_OPS[op]] += flops


class _Listener:
    """A FlopCounterMode's ear on the profiler's op events; the modules a count is filed under
    are its ModuleTracker's parents when the op runs (forward) or its node does (backward)."""

    def __init__(self, counter, tracker):
        self.counter = counter
        self.tracker = tracker
        self._recording = True          # (what the profiler's hooks ask of their listeners)
        self._stacks = {}               # thread -> open events
        self.active = False

    def start(self):
        self.active = True
        _profiler._active_profilers.append(self)
        _profiler._sync_hooks()

    def stop(self):
        self.active = False
        if self in _profiler._active_profilers:
            _profiler._active_profilers.remove(self)
        _profiler._sync_hooks()

    # -- the profiler's listener protocol (profiler._op_open / _op_close, record_function) --

    def _open(self, name, operands=None, category="user_annotation"):
        stack = self._stacks.setdefault(threading.get_ident(), [])
        if category != "cpu_op":
            event = None                        # (a record_function label)
        elif operands is None:
            event = _BACKWARD
        else:
            # (an uncounted kernel's event is kept, as a counted one's: what runs in it is
            # part of it)
            event = (name, operands) if name in _COUNTED or name in _UNCOUNTED_KERNELS else None
        stack.append(event)
        return event

    def _close(self, event, end=None, result=None):
        stack = self._stacks.get(threading.get_ident())
        if not stack:
            return
        stack.pop()
        if event is None or event is _BACKWARD or result is None:
            return
        # an op inside a counted op or a backward node is part of that one's count
        if any(e is _BACKWARD or type(e) is tuple for e in stack):
            return
        counts = _counts(*event, result)
        if counts is None:
            return
        forward, backward = counts
        for op, flops in forward:
            self.counter._add(self.tracker.parents, op, flops)
        node = getattr(result, "grad_fn", None)
        backward = [(op, flops) for op, flops, needed in backward
                    if needed is True or _needs_grad(needed)]
        if node is not None and backward:
            node.register_prehook(self._backward_hook(backward))

    def _backward_hook(self, backward):
        def count(grad_outputs):
            if self.active:
                for op, flops in backward:
                    self.counter._add(self.tracker.parents, op, flops)
        return count

