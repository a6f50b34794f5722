"""Differential fuzzer of random PROGRAMS over tapegrad's core op library, against PyTorch.

    python tools/fuzz.py --seconds 600                # subprocess-isolated batches, both kinds
    python tools/fuzz.py --kind programs --seconds 600
    python tools/fuzz.py --kind transforms --seconds 600   # tools/fuzz_transforms.py: vmap,
                                                      # grad, jvp, jacrev, hessian, forward AD...
    python tools/fuzz.py --kind formats --seconds 600      # tools/fuzz_formats.py: save/load
                                                      # across libraries, sparse, torch.masked
    python tools/fuzz.py --repro 1234                 # one program: its findings, then a
                                                      # minimal program printing the failure
    python tools/fuzz.py --seeds 0:200                # in process, one line per failing seed
    python tools/fuzz.py --report FILE.jsonl          # a run's findings grouped by verdict

One mechanism, three program generators: this file generates multi-step programs (`programs`);
tools/fuzz_surface.py generates one op of the wide surface plus a short chain (`surface`);
tools/fuzz_transforms.py generates pure functions of 1-3 float tensors and wraps each in every
function transform - vmap (in_dims / out_dims / nested / randomness, and against a Python loop),
grad / grad_and_value (argnums, has_aux), vjp, jvp, jacrev, jacfwd, hessian, functional_call,
forward_ad and autograd.functional (`transforms`, a kind of its own: the seeds of the other two
keep their programs).  They share the leaf values and the subprocess driver (crash and hang
detection by seed); the first two also the comparison and the known-difference filter.

A program here is Python source, one statement per step, over variables v0, v1, ...:

  - leaves: literal arrays (float32/float64 and complex64/complex128; int8..int64, uint8 and bool
    from COMPLEX_FROM on; shapes with 0-, 1-size dims and 0-d, values with
    -0.0, ties, and now and then NaN/inf), requires_grad or not, integer index and bool mask
    leaves where an op needs them;
  - ops: elementwise binary with broadcasting and Python scalars, unary math, activations,
    reductions with dims / keepdim, shape ops and views (transpose, permute, expand, slicing,
    select, view/reshape, squeeze), indexing (gather, index_select, masks, integer lists),
    the matmul family, nn.functional losses / softmax / log_softmax / layer_norm, dtype casts,
    detach, in-place ops on non-leaves and on views (and on leaves, for the error), setitem,
    retain_grad, and any step now and then under no_grad; and the wider surface, one table entry
    per op (g_wide): torch.special's one-tensor functions, the *_copy functions, torch.linalg
    and native_layer_norm, and in-place methods; seeds >= EXTRA_FROM (65,000,000) also draw
    from WIDE_EXTRA / EXTRA_INPLACE (g_extra: logaddexp, fmax, ldexp, cross, tile, rot90,
    block_diag, kthvalue, cov, cdist, kron, tensordot, embedding, pixel_shuffle, pdist, the
    view-changing in-place methods t_ / unsqueeze_ / squeeze_, index_add_ / scatter_ / put_, ...),
    and seeds >= LINALG_FROM (65,100,000) from WIDE_LINALG (g_linalg: the solves on factors, the
    `_ex` variants, lu / lu_unpack, qr, svd's and eigh's factors through abs(), lstsq,
    householder_product, ormqr, geqrf), and seeds >= COMPLEX_FROM (65,200,000) from WIDE_CPLX /
    CPLX_INPLACE (g_complex2: arithmetic real x complex with scalars and tensors, parts, polar /
    complex / view_as_*, complex math, matmul / mm / bmm / einsum / vdot, sum / prod / cumsum /
    cumprod / linalg norms, torch.fft, views and in-place writes through them, .real / .imag
    included) and WIDE_INT / INT_INPLACE (g_int: int8..int64, uint8 and bool leaves: floor /
    trunc division and remainder with negatives, bitwise ops and shifts, promotion with float
    scalars and tensors, reduction dtypes, argmax / topk / sort, clamp with float bounds,
    comparisons, where with mixed dtypes), and seeds >= WRITES_FROM (65,500,000) from
    VIEW_WRITES (g_writes: augmented assignments to basic / advanced / masked indexes, in-place
    methods on diagonal / narrow / select / transposed views, fills from 0-d tensors that require
    grad, overlapping writes PyTorch refuses, out= into a tensor that requires grad or into a
    detached alias), and seeds >= OUT_FROM (66,900,000) from OUT_VARIANTS (g_out: out= of
    elementwise ops, reductions, scans, sorts, products, joins and gathers into an out of the
    result's shape, empty, of another shape, of a wider, an integer or another float dtype,
    permuted, requiring grad, the op's own input or an alias of an earlier variable; two in
    five of these seeds are mostly such writes), and seeds >= MIXED_FROM (67,000,000) from
    WIDE_MIXED (g_mixed: operands of two floating dtypes where PyTorch's rule is not binary
    promotion - rms_norm's weight, losses keeping the input's dtype, the normalisations'
    parameter rule, joins of half types under autocast, log products - and the ATen forms
    torch.batch_norm / native_*), and seeds >= BLIND_FROM (67,100,000) from WIDE_BLIND /
    BLIND_INPLACE (g_blind: public ops no other table drew - pinverse, triangular_solve,
    searchsorted, isin, unique_consecutive, cartesian_prod, combinations, vander, tensorsolve,
    hsplit / vsplit / dsplit, nuclear_norm, as_strided, the rarer special functions, the
    aliases, F's in-place activations, addmm_ / addbmm_ / baddbmm_ / addr_ / addmv_, in-place
    comparisons), and seeds >= FORMS_FROM (67,200,000) from g_forms (an operand transposed,
    strided, permuted, expanded, emptied, 0-d, integer or bool, handed to reductions with
    negative dims / dim tuples / keepdim, scans, float ops, binary ops with 0-d tensors of
    other dtypes, in-place ops on such views, out= into transposed / strided / expanded views),
    and seeds >= CHAINS_FROM (67,300,000) from g_chains (chains of views - unfold, as_strided,
    diagonal, narrow, chunk, expand - reduced or written in place; hooks and retain_grad around
    in-place writes; no_grad / enable_grad / inference_mode nestings and inference tensors used
    afterwards; requires_grad on integer tensors; nn modules with 0-batch, unbatched and
    1-sample inputs, their parameters leaves of the program), and seeds >= STACKS_FROM
    (67,400,000) from g_stacks (nn.Sequential stacks of Linear, norms and in-place activations,
    their parameters leaves, between hooks of every kind, train / eval switches, frozen and shared
    weights, parametrizations, state_dict round trips, dtype conversions, functional_call and
    no_grad calls),
    so the programs of lower seeds stay what they were;
  - a tail: backward of a weighted sum of the float outputs that require grad (leaf and
    retained .grad compared), or first and second derivatives via autograd.grad(create_graph).

The program is generated while it runs in PyTorch (so the shapes it draws fit), then run in
tapegrad; after every step the two must agree on raising (same builtin exception type) or on
value, dtype, shape and requires_grad; after the body every variable is compared again (in-place
writes through views); then the gradients.  `compile` programs are also run as one function
under tapegrad.compile on several calls with fresh leaf values: compiled and eager tapegrad must
agree bit for bit (outputs and gradients).

A value or gradient finding is adjudicated (tools/fuzz_adjudicate.py): float64 finite differences
of the program, with autograd's constants held, label it tapegrad-matches-FD / torch-matches-FD /
neither / degenerate / rounding / undecided; the report puts tapegrad's possible errors first.

A failing seed is shrunk (steps dropped, with the steps that use them, while the same kind of
finding remains) and printed as a runnable script: `import torch` or `import tapegrad as torch`.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
for _p in (ROOT, TOOLS):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import fuzz_surface as surface  # noqa: E402  (the shared values, comparison and known list)

FLOATS = ("float32", "float64")
COMPLEXES = ("complex64", "complex128")
MAX_STEPS = 14
# A leaf of this many elements or more is drawn as a seeded generator call instead of a literal
# (a program reaching the fused replay groups of tapegrad.compile needs >= 1024 elements).
BIG = 1024


# -- program text -------------------------------------------------------------------------------

def literal(arr):
    """Python source for `arr` (exact: float32 values round-trip through their double repr)."""
    def fmt(x):
        if arr.dtype.kind == "c":
            return f"complex({real(x.real)}, {real(x.imag)})"
        if arr.dtype.kind == "b":
            return "True" if x else "False"
        if arr.dtype.kind in "iu":
            return str(int(x))
        return real(x)

    def real(x):
        x = float(x)
        if x != x:
            return "nan"
        if x in (float("inf"), float("-inf")):
            return "inf" if x > 0 else "-inf"
        return repr(x)
    flat = ", ".join(fmt(x) for x in arr.reshape(-1))
    return f"np.array([{flat}], dtype='{arr.dtype}').reshape({tuple(arr.shape)})"


class Step:
    """One statement.  `out`: the variable it defines (None for a pure statement);
    `nograd`: runs under no_grad; `ctx`: None or the source of a context manager it runs in
    (saved-tensor hooks, parametrize.cached), outside no_grad; `uses`: the variables it reads
    (for shrinking)."""

    exact = False       # drawn by an elementwise generator: bfloat16 results compared bit for bit

    def __init__(self, code, out=None, nograd=False, stmt=False, ctx=None):
        self.code, self.out, self.nograd, self.stmt = code, out, nograd, stmt
        self.uses = set(re.findall(r"\bv\d+\b", code + (ctx or ""))) - {out}
        self.compiled = compile(code, "<fuzz>", "exec" if stmt else "eval")
        self.set_ctx(ctx)

    def set_ctx(self, ctx):
        self.ctx = ctx
        self.ctx_compiled = compile(ctx, "<fuzz>", "eval") if ctx else None

    def source(self):
        line = self.code if self.stmt else f"{self.out} = {self.code}"
        if self.nograd:
            line = f"with torch.no_grad():\n    {line}"
        if self.ctx:
            line = f"with {self.ctx}:\n" + "\n".join("    " + x for x in line.split("\n"))
        return line

    def is_leaf(self):
        """Whether it defines a leaf of the program (a literal tensor, or a Parameter of one)."""
        return self.code.startswith(("torch.tensor(", "torch.nn.Parameter(torch.tensor("))


class Program:
    """`cplx`: the variables of complex dtype (in torch's run): their loss terms and second-order
    terms take the real part (backward needs a real scalar)."""

    def __init__(self, seed, steps, mode, loss_vars, retained, weight_seed, cplx=frozenset(),
                 context=None):
        self.seed, self.steps, self.mode = seed, steps, mode
        self.loss_vars, self.retained, self.weight_seed = loss_vars, retained, weight_seed
        self.cplx = frozenset(cplx)
        self.context = context      # a key of CONTEXTS (seeds >= CONTEXT_FROM) or None

    def derive(self, **changes):
        """The same program with some fields replaced."""
        f = dict(seed=self.seed, steps=self.steps, mode=self.mode, loss_vars=self.loss_vars,
                 retained=self.retained, weight_seed=self.weight_seed, cplx=self.cplx,
                 context=self.context)
        f.update(changes)
        return Program(**f)

    def leaves(self):
        return [s.out for s in self.steps if s.is_leaf()]

    def grad_leaves(self):
        return [s.out for s in self.steps if s.is_leaf() and
                ("requires_grad=True" in s.code or s.code.endswith(".requires_grad_()")
                 or s.code.startswith("torch.nn.Parameter("))]

    def term(self, v):
        """Source of loss term v: (v * W).sum(), of its real part for a complex v."""
        return f"({v} * W{v[1:]}).real.sum()" if v in self.cplx else f"({v} * W{v[1:]}).sum()"

    def tail(self, live):
        """The tail's statements, over the loss variables that exist (`live`)."""
        terms = [v for v in self.loss_vars if v in live]
        if not terms or self.mode == "plain":
            return []
        lines = [f"loss = {' + '.join(self.term(v) for v in terms)}"]
        leaves = self.grad_leaves()
        if self.mode == "grad2" and leaves:
            lines.append(f"G = torch.autograd.grad(loss, [{', '.join(leaves)}], "
                         "create_graph=True, allow_unused=True)")
            part = ".real" if self.cplx & set(leaves) else ""
            lines.append(f"S = sum((g * WG[i]){part}.sum() for i, g in enumerate(G) "
                         "if g is not None and g.requires_grad)")
            lines.append(f"G2 = torch.autograd.grad(S, [{', '.join(leaves)}], allow_unused=True)"
                         " if isinstance(S, torch.Tensor) and S.requires_grad else None")
        else:
            lines.append("loss.backward()")
        return lines

    def weights(self, name, shape, dtype):
        rng = np.random.default_rng([self.weight_seed, int(name[1:])])
        w = rng.standard_normal(shape)
        if dtype in COMPLEXES:
            # a complex weight: Re(v * w) reads both the real and the imaginary part of v
            w = w + 1j * rng.standard_normal(shape)
        # (numpy has no bfloat16: a bfloat16 term's weight is float32, its product float32)
        return w.astype("float32" if dtype == "bfloat16" else dtype)

    def script(self, live=None):
        live = live if live is not None else {s.out for s in self.steps if s.out}
        out = ["import numpy as np", "import torch            # or: import tapegrad as torch",
               "F = torch.nn.functional", "nan, inf = float('nan'), float('inf')"]
        body = [s.source() for s in self.steps]
        tail = self.tail(live)
        if tail:
            tail = [f"# W<k>: weights of the loss terms, np.random.default_rng"
                    f"([{self.weight_seed}, k]).standard_normal(v<k>.shape) in v<k>'s dtype"
                    + ("; WG[i]: the same with k = 1000 + i, in the shape of the i-th leaf"
                       if self.mode == "grad2" else "")] + tail
        manager, with_tail = context_source(self.context)
        if manager:
            if self.context == "function-mode":
                out += PASS_THROUGH_MODE.split("\n")
            inside = body + (tail if with_tail else [])
            out.append(f"with {manager}:")
            out += ["    " + x for line in inside for x in line.split("\n")]
            out += [] if with_tail else tail
        else:
            out += body + tail
        return "\n".join(out)


# -- generation ---------------------------------------------------------------------------------

class Meta:
    def __init__(self, t):
        self.shape = tuple(t.shape)
        self.dtype = str(t.dtype).split(".")[-1]
        self.rg = t.requires_grad
        self.leaf = t.is_leaf
        self.float = t.is_floating_point()
        self.cplx = t.is_complex()

    @property
    def nd(self):
        return len(self.shape)


_TENSOR_TYPES = None


def is_tensor(x):
    global _TENSOR_TYPES
    if _TENSOR_TYPES is None:
        import tapegrad
        import torch
        _TENSOR_TYPES = (torch.Tensor, tapegrad.Tensor)
    return isinstance(x, _TENSOR_TYPES)


class Generator:
    """Draws steps that fit the shapes the program has so far (run in torch as they are drawn)."""

    def __init__(self, seed):
        import torch
        self.torch = torch
        self.r = random.Random(seed)
        self.seed = seed
        self.steps = []
        self.ns = namespace(torch)
        self.meta = {}
        self.counter = 0
        self.exact = False          # the current generator is elementwise (Step.exact)
        self.bfloat16 = False       # float leaves converted with .to(torch.bfloat16)

    # variables
    def fresh(self):
        name = f"v{self.counter}"
        self.counter += 1
        return name

    def add(self, code, stmt=False, nograd=False, out=None, ctx=None):
        """Append a step, run it in torch, refresh the metadata; returns its variable or None
        when torch raised (the step stays: the error is compared too)."""
        if not stmt and out is None:
            out = self.fresh()
        step = Step(code, out, nograd, stmt, ctx)
        step.exact = self.exact
        self.steps.append(step)
        ok = run_step(self.torch, self.ns, step)[0] == "ok"
        self.meta = {}
        for k, v in self.ns.items():
            if re.fullmatch(r"v\d+", k) and is_tensor(v):
                try:
                    self.meta[k] = Meta(v)
                except Exception:  # noqa: BLE001 - torch: a view whose base was written
                    pass
        return out if ok and not stmt else None

    def vars(self, pred=lambda m: True):
        return [k for k, m in self.meta.items() if pred(m)]

    def pick(self, pred=lambda m: True):
        c = self.vars(pred)
        if not c:
            return None
        # later variables more often: programs grow deep rather than wide
        w = [1 + i for i in range(len(c))]
        return self.r.choices(c, w)[0]

    def pick_float(self, pred=lambda m: True):
        return self.pick(lambda m: m.float and pred(m))

    def leaf(self, shape, dtype=None, rg=None, kind="float", lo=0, hi=5, style=None,
             param=False):
        """A literal leaf (`param`: wrapped in nn.Parameter, for a module's weight)."""
        r = self.r
        bf16 = dtype == "bfloat16"      # (a partner of a bfloat16 variable: drawn in float32)
        if bf16:
            dtype = "float32"
        if kind == "float" and int(np.prod(shape)) >= BIG and style is None and not param:
            dtype = dtype or r.choice(FLOATS)
            rg = r.random() < 0.8 if rg is None else rg
            if self.bfloat16:
                return self.add(self._to_bfloat16(
                    f"torch.tensor({big_literal(r.randrange(2 ** 32), shape, dtype)})", rg, bf16))
            return self.add(f"torch.tensor({big_literal(r.randrange(2 ** 32), shape, dtype)}"
                            + (", requires_grad=True)" if rg else ")"))
        if kind == "complex":
            dtype = dtype or r.choice(COMPLEXES)
            part = FLOATS[dtype == "complex128"]
            if style is None:
                style = r.choices(["normal", "ties", "special", "zeros"], [8, 1, 0.5, 1])[0]
            arr = (surface.make_values(r, shape, part, style)
                   + 1j * surface.make_values(r, shape, part, "normal" if style == "special"
                                              else style))
            if rg is None:
                rg = r.random() < 0.8
        elif kind == "float":
            dtype = dtype or r.choice(FLOATS)
            if style is None:
                style = r.choices(["normal", "ties", "special", "zeros", "positive", "negzero"],
                                  [8, 1, 0.6, 1, 1, 1])[0]
            if style == "negzero":
                arr = surface.make_values(r, shape, dtype, "normal")
                if arr.size:
                    arr.reshape(-1)[r.randrange(arr.size)] = -0.0
            else:
                arr = surface.make_values(r, shape, dtype, style)
            if rg is None:
                rg = r.random() < 0.8
        elif kind == "int":
            arr = np.random.default_rng(r.randrange(2 ** 32)).integers(lo, max(hi, lo + 1),
                                                                       size=shape)
            dtype, rg = "int64", False
        elif kind == "ints":
            # (seeds >= COMPLEX_FROM) `dtype` one of INTS: small values of both signs, now and
            # then the dtype's extremes (wrapping); style "nonzero" (divisors), "shift" (0..4)
            nr = np.random.default_rng(r.randrange(2 ** 32))
            info = np.iinfo(dtype)
            if style == "shift":
                arr = nr.integers(0, 5, size=shape)
            elif r.random() < 0.15:
                arr = nr.integers(info.min, int(info.max) + 1, size=shape)
            else:
                arr = nr.integers(max(info.min, -7), 8, size=shape)
            if style == "nonzero":
                arr = np.where(arr == 0, 1, arr)
            rg = False
        else:
            arr = np.random.default_rng(r.randrange(2 ** 32)).random(shape) < 0.5
            dtype, rg = "bool", False
        arr = np.asarray(arr, dtype=dtype)
        if param:
            return self.add(f"torch.nn.Parameter(torch.tensor({literal(arr)}))")
        if kind == "float" and (self.bfloat16 or bf16):
            return self.add(self._to_bfloat16(f"torch.tensor({literal(arr)})", rg, bf16))
        code = f"torch.tensor({literal(arr)}" + (", requires_grad=True)" if rg else ")")
        return self.add(code)

    def _to_bfloat16(self, code, rg, always=False):
        """A float leaf of a bfloat16 program: its values converted (one in eight stays in its
        own dtype, for the promotions), then made to require grad (a bfloat16 leaf)."""
        if always or self.r.random() < 0.875:
            code += ".to(torch.bfloat16)"
        return code + (".requires_grad_()" if rg else "")

    def shape(self, nd=None, lo=0, hi=4):
        nd = self.r.choice([0, 1, 2, 2, 3, 3]) if nd is None else nd
        return surface.rand_shape(self.r, nd, lo, hi)

    def dim(self, nd, invalid=0.03):
        return surface.rdim(self.r, nd, invalid)


def big_literal(key, shape, dtype):
    """Source of a large leaf's values: seeded normal draws rounded to `dtype` (the second astype
    is the one tools/fuzz_adjudicate.py widens to float64: the values stay those of `dtype`)."""
    return (f"np.random.default_rng({key}).standard_normal({tuple(shape)})"
            f".astype('{dtype}').astype(dtype='{dtype}')")


def namespace(L):
    ns = {"torch": L, "F": L.nn.functional, "np": np, "nan": float("nan"), "inf": float("inf")}
    exec(PASS_THROUGH_MODE, ns)
    return ns


def run_step(L, ns, step):
    try:
        with contextlib.ExitStack() as stack:
            if step.ctx:
                stack.enter_context(eval(step.ctx_compiled, ns))
            if step.nograd:
                stack.enter_context(L.no_grad())
            value = _exec(step, ns)
    except Exception as e:  # noqa: BLE001 - an error is a result here
        return ("err", surface.err_kind(e), f"{type(e).__name__}: {str(e)[:200]}")
    return ("ok", value)


def _exec(step, ns):
    if step.stmt:
        exec(step.compiled, ns)
        return None
    value = eval(step.compiled, ns)
    ns[step.out] = value
    return value


# The op generators: each draws one step from the program so far (or returns without adding).

OPS = []


def gen(weight):
    def deco(fn):
        OPS.append((fn, weight))
        return fn
    return deco


def broadcast_partner(g, a):
    """A variable or a new leaf whose shape broadcasts with a's (now and then one that does
    not, or a Python number)."""
    r, m = g.r, g.meta[a]
    u = r.random()
    if u < 0.15:
        return repr(r.choice([2.5, -1.5, 0.5, 3, -2, 0.0, -0.0]))
    if u < 0.45:
        same = g.vars(lambda x: x.float and _broadcasts(x.shape, m.shape))
        if same:
            return r.choice(same)
    if u < 0.48:
        return g.leaf(tuple(d + 1 for d in m.shape) or (2,), m.dtype)
    shape = list(m.shape[r.randint(0, m.nd):]) if m.nd else []
    shape = [1 if r.random() < 0.3 else d for d in shape]
    if r.random() < 0.2:
        shape = [1] * r.randint(0, 1) + shape
    dt = m.dtype if r.random() < 0.85 else r.choice(FLOATS)
    return g.leaf(tuple(shape), dt)


def _broadcasts(s1, s2):
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


@gen(6)
def g_binary(g):
    a = g.pick_float()
    if a is None:
        return
    b = broadcast_partner(g, a)
    if b is None:
        return
    r = g.r
    x, y = (a, b) if r.random() < 0.8 or b.startswith("v") else (b, a)
    code = r.choice([
        f"{x} + {y}", f"{x} - {y}", f"{x} * {y}", f"{x} / {y}",
        f"torch.add({x}, {y}, alpha={r.choice([2, -0.5])})" if y.startswith("v") else f"{x} + {y}",
        f"torch.maximum({x}, {y})" if y.startswith("v") else f"torch.clamp({x}, min={y})",
        f"torch.minimum({x}, {y})" if y.startswith("v") else f"torch.clamp({x}, max={y})",
        f"torch.where({x} > 0, {x}, {y})",
        f"{x}.abs() ** {y}" if x.startswith("v") and r.random() < 0.5 else f"{x} ** 2",
        f"torch.atan2({x}, {y})" if y.startswith("v") and x.startswith("v") else f"{x} * {y}",
    ])
    g.add(code, nograd=r.random() < 0.08)


UNARY = ["-{0}", "{0}.abs()", "{0}.exp()", "torch.log({0}.abs() + 0.5)", "{0}.log()",
         "{0}.sqrt()", "{0}.abs().sqrt()", "{0}.sin()", "{0}.cos()", "{0}.tanh()",
         "{0}.sigmoid()", "torch.relu({0})", "F.gelu({0})", "F.silu({0})", "F.softplus({0})",
         "F.elu({0})", "F.leaky_relu({0}, 0.1)", "F.hardtanh({0})", "{0}.clamp(-0.5, 0.7)",
         "{0}.clamp(min=0.0)", "{0}.sign()", "{0}.reciprocal()", "{0}.rsqrt()", "{0}.square()",
         "{0}.log1p()", "{0}.expm1()", "torch.erf({0})", "{0}.floor()", "{0}.round()",
         "{0} * {0}", "{0}.pow(3)", "{0}.pow(0.5)", "F.relu6({0})", "torch.atan({0})",
         "{0}.sinh()", "torch.asin({0}.clamp(-1, 1))", "F.logsigmoid({0})", "F.mish({0})",
         "{0}.trunc()", "{0}.frac()", "torch.nan_to_num({0})", "{0}.clamp(max=-0.0)",
         "torch.isfinite({0})", "{0} > 0", "{0} == {0}"]


@gen(6)
def g_unary(g):
    a = g.pick_float()
    if a is not None:
        g.add(g.r.choice(UNARY).format(a), nograd=g.r.random() < 0.08)


@gen(5)
def g_reduce(g):
    r = g.r
    a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    kd = r.random() < 0.4
    if r.random() < 0.3 or m.nd == 0:
        name = r.choice(["sum", "mean", "prod", "amax", "amin", "max", "min", "var", "std",
                         "norm", "logsumexp", "nansum"])
        if name == "logsumexp":
            code = f"{a}.logsumexp({r.randrange(-m.nd, m.nd) if m.nd else 0})"
        elif name in ("var", "std"):
            code = f"{a}.{name}(correction={r.choice([0, 1, 2])})" if r.random() < 0.5 \
                else f"{a}.{name}()"
        elif name == "norm":
            pn = r.choice([1, 2, 3, "float('inf')"])
            code = f"{a}.norm(p={pn})"
        else:
            code = f"{a}.{name}()"
    else:
        nd = m.nd
        dims = sorted({g.dim(nd) for _ in range(r.randint(1, min(nd, 2)))})
        d = dims[0]
        dims_s = f"({', '.join(map(str, dims))},)"
        code = r.choice([
            f"{a}.sum({dims_s}, keepdim={kd})", f"{a}.mean({d}, keepdim={kd})",
            f"{a}.amax({dims_s}, keepdim={kd})", f"{a}.amin({d}, keepdim={kd})",
            f"{a}.max({d}, keepdim={kd}).values", f"{a}.min({d}).values",
            f"{a}.max({d}, keepdim={kd}).indices", f"{a}.argmax({d})",
            f"{a}.var({d}, keepdim={kd}, correction={r.choice([0, 1])})",
            f"{a}.std({dims_s}, keepdim={kd})", f"{a}.prod({d}, keepdim={kd})",
            f"{a}.logsumexp({d}, keepdim={kd})", f"{a}.norm(dim={d}, keepdim={kd})",
            f"{a}.norm(p=1, dim={dims_s})", f"torch.cumsum({a}, {d})",
            f"{a}.sum({d}, dtype=torch.float64)", f"torch.mean({a}, dim={dims_s})",
            f"{a}.cumprod({d})",
        ])
    g.add(code, nograd=r.random() < 0.05)


@gen(7)
def g_shape(g):
    r = g.r
    a = g.pick()
    if a is None:
        return
    m = g.meta[a]
    nd, sh = m.nd, m.shape
    c = []
    if nd >= 2:
        i, j = g.dim(nd), g.dim(nd)
        c += [f"{a}.transpose({i}, {j})", f"{a}.mT", f"{a}.permute{tuple(r.sample(range(nd), nd))}",
              f"{a}.flatten({r.choice([0, 1])})", f"{a}.movedim(0, -1)"]
    if nd == 2:
        c += [f"{a}.T", f"{a}.t()"]
    if nd >= 1:
        d = g.dim(nd)
        n = sh[d] if -nd <= d < nd else 0
        lo = r.randint(-n - 1, n)
        c += [f"{a}[{lo}:{r.randint(lo, n + 1)}:{r.choice([1, 1, 2, 3])}]",
              f"{a}[..., {r.randint(-1, max(sh[-1] - 1, 0))}]" if sh[-1] else f"{a}[..., 0:0]",
              f"{a}[{r.randint(-sh[0], max(sh[0] - 1, 0))}]" if sh[0] else f"{a}[0:]",
              f"{a}.narrow({d}, 0, {r.randint(0, n)})", f"{a}.flip({d})",
              f"{a}.unbind({d})[0]" if n else f"{a}.unsqueeze(0)",
              f"{a}.split({r.randint(1, 3)}, {d})[-1]", f"{a}.chunk(2, {d})[0]",
              f"{a}.roll(1, {d})", f"{a}[None, ..., None]", f"{a}[:, None]" if nd else f"{a}",
              f"{a}.repeat({', '.join(str(r.randint(1, 2)) for _ in range(nd))})"]
    ones = [i for i, s in enumerate(sh) if s == 1]
    new_shape = tuple(r.randint(1, 3) if s == 1 else s for s in sh)
    c += [f"{a}.unsqueeze({r.randint(-nd - 1, nd)})", f"{a}.squeeze()",
          f"{a}.squeeze({ones[0] if ones and r.random() < 0.8 else g.dim(nd)})",
          f"{a}.expand{(r.randint(1, 2),) + new_shape}", f"{a}.expand_as(torch.empty({(2,) + new_shape}))",
          f"{a}.reshape(-1)", f"{a}.view(-1)", f"{a}.reshape({_reshape(r, sh)})",
          f"{a}.view({_reshape(r, sh)})", f"{a}.contiguous()", f"{a}.clone()",
          f"{a}.detach()", f"{a}.detach().requires_grad_()" if m.float and m.leaf is False
          else f"{a}.detach()", f"{a}.double()", f"{a}.float()", f"{a}.to(torch.float64)",
          f"{a}[...]", f"{a}.flatten()", f"torch.cat([{a}, {a}], {g.dim(nd) if nd else 0})",
          f"torch.stack([{a}, {a}], {r.randint(-nd - 1, nd)})", f"{a}.view_as({a})",
          f"{a}.expand({', '.join('-1' for _ in sh)})" if sh else f"{a}.expand(())"]
    g.add(r.choice(c), nograd=r.random() < 0.08)


def _reshape(r, shape):
    n = int(np.prod(shape)) if shape else 1
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [0]
    d = r.choice(divisors)
    if n == 0:
        return r.choice(["(0, 2)", "(2, 0, -1)", "(-1, 3)", "(0,)"])
    return r.choice([f"({d}, -1)", f"(-1, {d}, 1)", f"({n},)", f"({d}, {n // d})" if d else "(-1,)"])


@gen(4)
def g_index(g):
    r = g.r
    a = g.pick_float(lambda m: m.nd >= 1)
    if a is None:
        return
    m = g.meta[a]
    nd, sh = m.nd, m.shape
    d = g.dim(nd, 0)
    n = sh[d]
    kind = r.choice(["gather", "index_select", "mask", "masked_fill", "list",
                     "where_mask", "tensor_index", "masked_select"])
    if kind == "gather":
        ishape = tuple(r.randint(0, s) if i == d % nd else r.randint(0, s) for i, s in enumerate(sh))
        hi = n + (1 if r.random() < 0.03 else 0)
        idx = g.leaf(ishape, kind="int", lo=-(n if r.random() < 0.1 else 0), hi=max(hi, 1))
        if idx:
            g.add(f"torch.gather({a}, {d}, {idx})")
    elif kind == "index_select":
        idx = g.leaf((r.randint(0, 4),), kind="int", lo=0, hi=max(n, 1))
        if idx:
            g.add(f"torch.index_select({a}, {d}, {idx})")
    elif kind in ("mask", "masked_select"):
        mask = g.leaf(sh if r.random() < 0.8 else sh[r.randint(0, nd - 1):], kind="bool")
        if mask:
            g.add(f"{a}[{mask}]" if kind == "mask" else f"torch.masked_select({a}, {mask})")
    elif kind == "masked_fill":
        mask = f"{a} > 0" if r.random() < 0.5 else g.leaf(sh[r.randint(0, nd):], kind="bool")
        if mask:
            fill = r.choice([0.0, -1.5, "-inf"])
            g.add(f"{a}.masked_fill({mask}, {fill})")
    elif kind == "where_mask":
        g.add(f"torch.where({a} < 0.5, {a} * 2, torch.zeros_like({a}))")
    elif kind == "tensor_index":
        idx = g.leaf((r.randint(0, 3),) * r.randint(1, 2), kind="int", lo=-n, hi=max(n, 1))
        if idx:
            g.add(f"{a}[{idx}]")
    else:
        k = [r.randint(-n, max(n - 1, 0)) for _ in range(r.randint(0, 3))] if n else []
        g.add(f"{a}[{k}]" if r.random() < 0.6 else f"{a}[:, {k}]" if nd >= 2 else f"{a}[{k}]")


@gen(4)
def g_matmul(g):
    r = g.r
    a = g.pick_float(lambda m: 1 <= m.nd <= 3)
    if a is None:
        return
    m = g.meta[a]
    sh, dt = m.shape, m.dtype
    k = sh[-1]
    kind = r.choice(["matmul", "at", "mm", "bmm", "linear", "outer", "dot", "addmm", "einsum"])
    p = r.randint(0, 3)
    if kind in ("matmul", "at"):
        bshape = r.choice([(k,), (k, p), (2, k, p) if m.nd < 3 else (sh[0], k, p),
                           (1, k, p), (k + 1, p) if r.random() < 0.1 else (k, p)])
        b = g.leaf(bshape, dt)
        if b:
            g.add(f"torch.matmul({a}, {b})" if kind == "matmul" else f"{a} @ {b}")
    elif kind == "mm" and m.nd == 2:
        b = g.leaf((k, p), dt)
        if b:
            g.add(f"torch.mm({a}, {b})")
    elif kind == "bmm" and m.nd == 3:
        b = g.leaf((sh[0], k, p), dt)
        if b:
            g.add(f"torch.bmm({a}, {b})")
    elif kind == "outer" and m.nd == 1:
        b = g.leaf((p,), dt)
        if b:
            g.add(f"torch.outer({a}, {b})")
    elif kind == "dot" and m.nd == 1:
        b = g.leaf((k,), dt)
        if b:
            g.add(f"torch.dot({a}, {b})")
    elif kind == "addmm" and m.nd == 2:
        b = g.leaf((k, p), dt)
        c = g.leaf(r.choice([(sh[0], p), (p,), ()]), dt)
        if b and c:
            g.add(f"torch.addmm({c}, {a}, {b}, beta={r.choice([1, 0.5])}, alpha={r.choice([1, 2])})")
    elif kind == "einsum" and m.nd == 2:
        b = g.leaf((k, p), dt)
        if b:
            g.add(f"torch.einsum('ij,jk->ik', {a}, {b})")
    else:
        w = g.leaf((p, k), dt)
        bias = g.leaf((p,), dt) if r.random() < 0.6 else None
        if w:
            g.add(f"F.linear({a}, {w}{', ' + bias if bias else ''})")


@gen(4)
def g_nn(g):
    r = g.r
    a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    sh, dt, nd = m.shape, m.dtype, m.nd
    red = r.choice(["mean", "sum", "none"])
    kind = r.choice(["softmax", "log_softmax", "layer_norm", "mse", "l1", "smooth_l1", "huber",
                     "bce_logits", "bce", "ce", "nll", "kl", "normalize", "dropout0"])
    if kind in ("softmax", "log_softmax"):
        g.add(f"F.{kind}({a}, dim={g.dim(nd)})" if r.random() < 0.8
              else f"torch.{kind}({a}, {g.dim(nd)}, dtype=torch.float64)")
    elif kind == "layer_norm" and nd >= 1:
        k = r.randint(1, min(nd, 2))
        ns = sh[nd - k:]
        w = g.leaf(ns, dt) if r.random() < 0.6 else None
        b = g.leaf(ns, dt) if w and r.random() < 0.7 else None
        g.add(f"F.layer_norm({a}, {ns}" + (f", {w}" if w else "") + (f", {b}" if b else "")
              + f", eps={r.choice([1e-5, 1e-3])})")
    elif kind in ("mse", "l1", "smooth_l1", "huber"):
        t = g.leaf(sh if r.random() < 0.9 else sh[1:], dt, rg=r.random() < 0.3)
        if t:
            name = {"mse": "mse_loss", "l1": "l1_loss", "smooth_l1": "smooth_l1_loss",
                    "huber": "huber_loss"}[kind]
            extra = {"smooth_l1": f", beta={r.choice([1.0, 0.5, 0.0])}",
                     "huber": f", delta={r.choice([1.0, 0.3])}"}.get(kind, "")
            g.add(f"F.{name}({a}, {t}, reduction='{red}'{extra})")
    elif kind in ("bce_logits", "bce"):
        t = g.leaf(sh, dt, rg=False, style="positive")
        if t:
            tt = f"({t} % 1.0)"
            if kind == "bce":
                g.add(f"F.binary_cross_entropy({a}.sigmoid(), {tt}, reduction='{red}')")
            else:
                pw = g.leaf(sh[-1:], dt, rg=False, style="positive") if nd and r.random() < 0.3 else None
                g.add(f"F.binary_cross_entropy_with_logits({a}, {tt}, reduction='{red}'"
                      + (f", pos_weight={pw}" if pw else "") + ")")
    elif kind in ("ce", "nll") and 1 <= nd <= 3:
        C = sh[1] if nd >= 2 else sh[0]
        tshape = (sh[0],) + sh[2:] if nd >= 2 else ()
        tgt = g.leaf(tshape, kind="int", lo=-100 if r.random() < 0.1 else 0,
                     hi=max(C + (1 if r.random() < 0.03 else 0), 1))
        if tgt is None:
            return
        opts = f", reduction='{red}'"
        if r.random() < 0.3:
            opts += f", ignore_index={r.choice([0, -100, 1])}"
        if r.random() < 0.3:
            w = g.leaf((C,), dt, rg=False, style="positive")
            opts += f", weight={w}"
        if kind == "ce":
            if r.random() < 0.3:
                opts += f", label_smoothing={r.choice([0.1, 0.5])}"
            g.add(f"F.cross_entropy({a}, {tgt}{opts})")
        else:
            g.add(f"F.nll_loss(F.log_softmax({a}, {1 if nd >= 2 else 0}), {tgt}{opts})")
    elif kind == "kl" and nd >= 1:
        t = g.leaf(sh, dt, rg=False)
        if t:
            g.add(f"F.kl_div(F.log_softmax({a}, -1), F.softmax({t}, -1), "
                  f"reduction='{r.choice(['batchmean', 'sum', 'mean', 'none'])}')")
    elif kind == "normalize" and nd >= 1:
        g.add(f"F.normalize({a}, dim={g.dim(nd)})")
    else:
        g.add(f"F.dropout({a}, p=0.5, training=False)")


# The wider surface (session 19): one table entry per op.  Each entry is a format string over
# {a} (the picked float variable), {b} (a broadcast partner of it), {d} (a dim of it) and {n}
# (its last dim's size), and the least ndim it needs.
WIDE_UNARY = [  # torch.special's one-tensor functions (the last ones are not differentiable)
    ("torch.special.erfcx({a})", 0), ("torch.special.i0({a})", 0), ("torch.special.i0e({a})", 0),
    ("torch.special.i1({a})", 0), ("torch.special.i1e({a})", 0), ("torch.special.ndtr({a})", 0),
    ("torch.special.ndtri({a}.sigmoid())", 0), ("torch.special.log_ndtr({a})", 0),
    ("torch.special.entr({a})", 0), ("torch.special.sinc({a})", 0),
    ("torch.special.logit({a}.sigmoid())", 0), ("torch.special.logit({a}, eps=0.1)", 0),
    ("torch.special.expit({a})", 0), ("torch.special.digamma({a})", 0),
    ("torch.special.psi({a}.abs() + 0.5)", 0), ("torch.special.gammaln({a})", 0),
    ("torch.special.erfinv({a}.tanh())", 0), ("torch.special.erfc({a})", 0),
    ("torch.special.exp2({a})", 0), ("torch.special.multigammaln({a}.abs() + 2, 2)", 0),
    ("torch.special.xlogy({a}, {b})", 0), ("torch.special.log_softmax({a}, {d})", 1),
    ("torch.special.softmax({a}, {d})", 1), ("torch.special.logsumexp({a}, {d})", 1),
    ("torch.special.bessel_j0({a})", 0), ("torch.special.modified_bessel_k1({a}.abs())", 0),
    ("torch.special.spherical_bessel_j0({a})", 0), ("torch.special.airy_ai({a})", 0),
    ("torch.special.chebyshev_polynomial_t({a}, 3)", 0),
    ("torch.special.hermite_polynomial_h({a}, 2)", 0),
]
WIDE_COPY = [  # the *_copy functions (a view op's values, materialised)
    ("torch.transpose_copy({a}, 0, -1)", 1), ("torch.permute_copy({a}, (1, 0))", 2),
    ("torch.t_copy({a})", 1), ("torch.diagonal_copy({a}, 0, -2, -1)", 2),
    ("torch.expand_copy({a}, (2,) + tuple({a}.shape))", 0), ("torch.narrow_copy({a}, {d}, 0, 1)", 1),
    ("torch.select_copy({a}, {d}, -1)", 1), ("torch.squeeze_copy({a})", 0),
    ("torch.unsqueeze_copy({a}, -1)", 0), ("torch.view_copy({a}, (-1,))", 0),
    ("torch.detach_copy({a})", 0), ("torch.alias_copy({a})", 0),
    ("torch.unfold_copy({a}, {d}, 2, 1)", 1), ("torch.slice_copy({a}, {d}, 1, None, 2)", 1),
    ("torch.split_copy({a}, 1, {d})[-1]", 1), ("torch.unbind_copy({a}, {d})[0]", 1),
    ("torch.split_with_sizes_copy({a}, [1, {n} - 1], -1)[1]", 1),
    ("torch.as_strided_copy({a}.contiguous(), (1,), (1,))", 1),
]
WIDE_LINALG = [  # {s}: a square matrix (or batch) of {a}'s last dim
    ("torch.linalg.det({s})", 0), ("torch.linalg.slogdet({s})[1]", 0),
    ("torch.linalg.inv({s})", 0), ("torch.linalg.matrix_power({s}, 3)", 0),
    ("torch.linalg.matrix_power({s}, -1)", 0), ("torch.linalg.matrix_exp({s})", 0),
    ("torch.linalg.solve({s}, {a}.unsqueeze(-1))", 1), ("torch.linalg.svdvals({a})", 2),
    ("torch.linalg.eigvalsh({s} + {s}.mT)", 0), ("torch.linalg.eigh({s} + {s}.mT)[0]", 0),
    ("torch.linalg.cholesky({s} @ {s}.mT + torch.eye({n}, dtype={s}.dtype))", 0),
    ("torch.linalg.vector_norm({a}, {p})", 0), ("torch.linalg.vector_norm({a}, 2, dim={d})", 1),
    ("torch.linalg.matrix_norm({a})", 2), ("torch.linalg.matrix_norm({a}, 'nuc')", 2),
    ("torch.linalg.matrix_norm({a}, 2)", 2), ("torch.linalg.pinv({a})", 2),
    ("torch.linalg.multi_dot([{a}, {s}, {s}])", 2), ("torch.linalg.vecdot({a}, {b})", 1),
    ("torch.linalg.solve_triangular({s}.triu() + 3 * torch.eye({n}, dtype={s}.dtype), {s}, "
     "upper=True)", 0), ("torch.linalg.norm({a})", 0), ("torch.linalg.cond({s})", 0),
    ("torch.linalg.diagonal({s})", 0), ("torch.linalg.lu_factor({s})[0]", 0),
    ("torch.native_layer_norm({a}, ({n},), None, None, 1e-5)[0]", 1),
    ("torch.native_layer_norm({a}, ({n},), {w}, {w}, 1e-5)[2]", 1),
]
WIDE_INPLACE = [  # in-place methods on non-leaves ({a} picked as g_inplace picks)
    ("{a}.sin_()", 0), ("{a}.cos_()", 0), ("{a}.tan_()", 0), ("{a}.atan_()", 0),
    ("{a}.asinh_()", 0), ("{a}.sinh_()", 0), ("{a}.cosh_()", 0), ("{a}.log1p_()", 0),
    ("{a}.expm1_()", 0), ("{a}.erf_()", 0), ("{a}.erfc_()", 0), ("{a}.erfinv_()", 0),
    ("{a}.reciprocal_()", 0), ("{a}.rsqrt_()", 0), ("{a}.square_()", 0), ("{a}.sign_()", 0),
    ("{a}.sgn_()", 0), ("{a}.floor_()", 0), ("{a}.ceil_()", 0), ("{a}.round_()", 0),
    ("{a}.trunc_()", 0), ("{a}.frac_()", 0), ("{a}.exp2_()", 0), ("{a}.log_()", 0),
    ("{a}.log2_()", 0), ("{a}.log10_()", 0), ("{a}.lgamma_()", 0), ("{a}.digamma_()", 0),
    ("{a}.sinc_()", 0), ("{a}.logit_()", 0), ("{a}.nan_to_num_()", 0), ("{a}.deg2rad_()", 0),
    ("{a}.clamp_max_(0.3)", 0), ("{a}.clamp_min_(-0.3)", 0), ("{a}.clip_(-1, 1)", 0),
    ("{a}.negative_()", 0), ("{a}.absolute_()", 0), ("{a}.cumsum_({d})", 1),
    ("{a}.cumprod_({d})", 1), ("{a}.tril_()", 2), ("{a}.triu_(1)", 2),
    ("{a}.lerp_({b}, 0.3)", 0), ("{a}.addcmul_({b}, {b}, value=0.5)", 0),
    ("{a}.addcdiv_({b}, {b}.abs() + 1)", 0), ("{a}.hypot_({b})", 0), ("{a}.atan2_({b})", 0),
    ("{a}.copysign_({b})", 0), ("{a}.fmod_(1.5)", 0), ("{a}.remainder_(-1.5)", 0),
    ("{a}.xlogy_({b})", 0), ("{a}.float_power_(2)", 0), ("{a}.mvlgamma_(1)", 0),
    ("{a}.polygamma_(1)", 0), ("{a}.renorm_(2, 0, 1.0)", 1), ("{a}.index_fill_(-1, "
     "torch.tensor([0]), -1.5)", 1), ("{a}.fill_diagonal_(2.0)", 2),
]
# (session 20) nn.functional activations with their keyword options and the activation modules
# (in place too: `({a} * 1)` is a non-leaf, a bare {a} may be a leaf, for the error)
WIDE_ACT = [
    ("F.elu({a}, alpha=0.5)", 0), ("F.celu({a}, alpha=2.0)", 0), ("F.selu({a})", 0),
    ("F.gelu({a}, approximate='tanh')", 0), ("F.hardshrink({a}, lambd=0.3)", 0),
    ("F.softshrink({a}, 0.7)", 0), ("F.threshold({a}, 0.1, -2.0)", 0),
    ("F.rrelu({a}, 0.1, 0.3, training=False)", 0), ("F.glu({a}, {d})", 1),
    ("F.hardsigmoid({a})", 0), ("F.hardswish({a})", 0), ("F.softplus({a}, beta=2, threshold=1)", 0),
    ("F.softplus({a}, beta=-0.5)", 0), ("F.leaky_relu({a}, negative_slope=-0.2)", 0),
    ("F.prelu({a}, {w1})", 0), ("F.softsign({a})", 0), ("F.tanhshrink({a})", 0),
    ("F.softmin({a}, {d})", 1), ("F.softmax({a}, {d}, dtype=torch.float64)", 1),
    ("F.log_softmax({a}, dim={d}, dtype=torch.float32)", 1), ("F.hardtanh({a}, -0.3, 0.6)", 0),
    ("F.normalize({a}, p=1, dim={d}, eps=0.5)", 1), ("F.normalize({a}, p=float('inf'), dim={d})", 1),
    ("F.cosine_similarity({a}, {b}, dim=-1, eps=0.1)", 1),
    ("F.pairwise_distance({a}, {b}, p={p}, keepdim={kd})", 1),
    ("F.rms_norm({a}, ({n},), {w}, eps=0.01)", 1), ("F.rms_norm({a}, ({n},))", 1),
    ("F.local_response_norm({a}, 2)", 3), ("F.group_norm({a}, 1)", 2),
    ("F.instance_norm({a})", 3), ("F.layer_norm({a}, ({n},), bias=None, weight={w})", 1),
    ("torch.nn.ELU(alpha=0.3)({a})", 0), ("torch.nn.Softplus(beta=0.5, threshold=3)({a})", 0),
    ("torch.nn.Threshold(0.5, 1.0)({a})", 0), ("torch.nn.GELU('tanh')({a})", 0),
    ("torch.nn.ReLU(inplace=True)({a} * 1)", 0), ("torch.nn.ELU(inplace=True)({a} * 1)", 0),
    ("torch.nn.Hardtanh(-1.0, 0.5, inplace=True)({a} * 1)", 0),
    ("torch.nn.SELU(inplace=True)({a} * 1)", 0), ("torch.nn.SiLU(inplace=True)({a} * 1)", 0),
    ("torch.nn.Mish(inplace=True)({a} * 1)", 0), ("torch.nn.Hardswish(inplace=True)({a} * 1)", 0),
    ("torch.nn.Hardsigmoid(inplace=True)({a} * 1)", 0), ("torch.nn.CELU(0.5, inplace=True)({a} * 1)", 0),
    ("torch.nn.LeakyReLU(0.3, inplace=True)({a} * 1)", 0), ("torch.nn.ReLU6(inplace=True)({a})", 0),
    ("torch.nn.Threshold(0.0, -1.0, inplace=True)({a} * 1)", 0), ("torch.nn.Softmin(-1)({a})", 1),
    ("torch.nn.LogSoftmax(dim={d})({a})", 1), ("torch.nn.Softmax2d()({a})", 3),
    ("torch.nn.GLU(-1)({a})", 1), ("torch.nn.Tanhshrink()({a})", 0),
]
# losses with their keyword options ({t}: a target of {a}'s shape, {tp}: a positive one, {y}:
# a +-1 target, {c}: class indices of {a}'s last dim for an (N, C) or (C,) input)
WIDE_LOSS = [
    ("F.margin_ranking_loss({a}, {tg}, {y}, margin=0.5, reduction='{red}')", 0),
    ("F.hinge_embedding_loss({a}, {y}, margin=0.3, reduction='{red}')", 0),
    ("F.soft_margin_loss({a}, {y}, reduction='{red}')", 0),
    ("F.multilabel_soft_margin_loss({a}, ({t} > 0).to({a}.dtype), reduction='{red}')", 1),
    ("F.cosine_embedding_loss({a}, {tg}, {y}[:, 0] if {a}.dim() == 2 else {y}, margin=0.2, "
     "reduction='{red}')", 1),
    ("F.triplet_margin_loss({a}, {tg}, {t}, margin=0.5, p={p}, swap={kd}, reduction='{red}')", 1),
    ("F.triplet_margin_with_distance_loss({a}, {tg}, {t}, margin=2.0, swap={kd}, "
     "reduction='{red}')", 1),
    ("F.poisson_nll_loss({a}, {tp}, log_input={kd}, full=True, eps=0.01, reduction='{red}')", 0),
    ("F.poisson_nll_loss({a}.abs(), {tp}, log_input=False, reduction='{red}')", 0),
    ("F.gaussian_nll_loss({a}, {t}, {tp}, full={kd}, eps=0.1, reduction='{red}')", 0),
    ("F.gaussian_nll_loss({a}, {t}, {tp}[..., :1], reduction='{red}')", 1),
    ("F.multi_margin_loss({a}, {c}, p={pm}, margin=0.7, reduction='{red}')", 1),
    ("F.multi_margin_loss({a}, {c}, weight={tp}.reshape(-1)[:{n}].abs(), reduction='{red}')", 1),
    ("F.multilabel_margin_loss({a}, {mll}, reduction='{red}')", 1),
    ("F.kl_div({a}, {t}, reduction='{red}', log_target=True)", 0),
    ("F.binary_cross_entropy({a}.sigmoid(), ({t} > 0).to({a}.dtype), weight={tp}, "
     "reduction='{red}')", 0),
    ("F.cross_entropy({a}, F.softmax({t}, 1 if {a}.dim() > 1 else 0), label_smoothing=0.2, "
     "reduction='{red}')", 1),
    ("F.l1_loss({a}, {t}[..., :1], reduction='{red}')", 1),
    ("F.smooth_l1_loss({a}, {tg}, beta=0.0, reduction='{red}')", 0),
    ("F.huber_loss({a}, {tg}, delta=0.01, reduction='{red}')", 0),
    ("torch.nn.HuberLoss(reduction='{red}', delta=2.0)({a}, {t})", 0),
    ("torch.nn.BCEWithLogitsLoss(pos_weight={tp}, reduction='{red}')({a}, ({t} > 0).to({a}.dtype))", 0),
]
# reductions with dim tuples (now and then a repeated or empty one) and keepdim
WIDE_REDUCE = [
    ("{a}.sum({ds}, keepdim={kd})", 0), ("torch.mean({a}, {ds}, {kd})", 0),
    ("{a}.nansum({ds}, keepdim={kd})", 0), ("{a}.nanmean({ds}, keepdim={kd})", 0),
    ("{a}.amax({ds}, {kd})", 0), ("{a}.amin(dim={ds}, keepdim={kd})", 0),
    ("{a}.var({ds}, correction={cor}, keepdim={kd})", 0), ("{a}.std({ds}, unbiased=False)", 0),
    ("torch.var_mean({a}, {ds}, keepdim={kd})[{k01}]", 0),
    ("torch.std_mean({a}, dim={ds}, correction={cor})[{k01}]", 0),
    ("{a}.logsumexp({ds}, keepdim={kd})", 0), ("{a}.norm({p}, {ds}, {kd})", 0),
    ("torch.linalg.vector_norm({a}, {p}, dim={ds}, keepdim={kd})", 0),
    ("torch.count_nonzero({a}, {ds})", 0), ("torch.all({a} > 0, dim={ds})", 0),
    ("torch.any({a} > 0, dim={ds}, keepdim={kd})", 0), ("{a}.sum(())", 0),
    ("{a}.mean(dim=[])", 0), ("{a}.amax(())", 0), ("{a}.sum({ds}, dtype=torch.float64)", 0),
    ("{a}.mean({ds}, keepdim={kd}, dtype=torch.float64)", 0), ("{a}.sum(({d}, {d}))", 1),
    ("torch.median({a}, {d}, {kd}).values", 1), ("torch.nanmedian({a}, {d}).values", 1),
    ("torch.median({a})", 0), ("torch.nanmedian({a})", 0),
    ("torch.quantile({a}, {q}, dim={d}, keepdim={kd}, interpolation='{interp}')", 1),
    ("torch.nanquantile({a}, torch.tensor([0.1, 0.9], dtype={a}.dtype), dim={d})", 1),
    ("torch.quantile({a}, {q})", 0), ("torch.cummax({a}, {d}).values", 1),
    ("torch.cummin({a}, {d})[0]", 1), ("torch.logcumsumexp({a}, {d})", 1),
    ("torch.argmax({a}, {d}, keepdim={kd})", 1), ("torch.argmin({a}, dim={d})", 1),
    ("{a}.aminmax(dim={d}, keepdim={kd})[{k01}]", 1), ("torch.mode({a}, {d}).values", 1),
    ("{a}.max(dim={d}, keepdim={kd})[0]", 1), ("torch.prod({a}, {d}, True)", 1),
    ("{a}.sum({d}, keepdim={kd}).sum()", 1), ("torch.special.logsumexp({a}, {ds}, {kd})", 0),
]
# indexing: negative steps (PyTorch refuses), bool masks over leading dims, index tensors (also
# two broadcast together and separated by a slice), and the scatter / index_* family
WIDE_INDEX = [
    ("{a}[::-1]", 1), ("{a}[..., ::-2]", 1), ("{a}[{m}]", 0), ("{a}[{m0}]", 1),
    ("{a}[..., {ml}]", 1), ("{a}[{i0}]", 1), ("{a}[{i0}, ...]", 1), ("{a}[:, {i1}]", 2),
    ("{a}[{i0}, {i1}]", 2), ("{a}[{i0}, :, {i2}]", 3), ("{a}[None, {i0}]", 1),
    ("{a}[{i0}, 1:]", 2), ("{a}[..., {i0}.flip(0)] if {a}.dim() == 1 else {a}[{i0}][..., -1]", 1),
    ("{a}[torch.tensor(True)]", 0), ("{a}[False]", 0), ("{a}[{a} > 0]", 0),
    ("{a}[[True] * {a}.shape[0]]", 1), ("{a}[-1::2]", 1), ("{a}[{i0}.unsqueeze(1)]", 1),
    ("{a}[{i0}][{m0}[:{i0}.shape[0]]]", 1),
    ("torch.take({a}, {iflat})", 0), ("torch.take_along_dim({a}, {ix}, dim={d})", 1),
    ("torch.take_along_dim({a}, {ix})", 1), ("torch.gather({a}, {d}, {ix}, sparse_grad=False)", 1),
    ("{a}.scatter({d}, {ix}, {tg})", 1), ("{a}.scatter({d}, {ix}, 1.5)", 1),
    ("{a}.scatter_add({d}, {ix}, {tg})", 1),
    ("{a}.scatter_reduce({d}, {ix}, {tg}, '{sr}', include_self={kd})", 1),
    ("{a}.scatter({d}, {ix}, {tg}, reduce='add')", 1),
    ("{a}.index_add({d}, {id}, {src}, alpha=-2)", 1), ("{a}.index_copy({d}, {idu}, {src})", 1),
    ("{a}.index_fill({d}, {id}, -0.5)", 1), ("{a}.index_reduce({d}, {id}, {src}, '{ir}', "
                                              "include_self={kd})", 1),
    ("{a}.masked_scatter({m}, {tg})", 0), ("{a}.put({iflat}, {vflat}, accumulate={kd})", 0),
    ("{a}.index_put(({i0},), {src0}, accumulate={kd})", 1),
    ("torch.select_scatter({a}, {a}.select({d}, 0) * 2, {d}, 0)", 1),
    ("torch.slice_scatter({a}, {a}.narrow({d}, 0, 1) * 3, {d}, 0, 1)", 1),
    ("torch.diagonal_scatter({a}, {a}.diagonal() * 2)", 2),
    ("{a}.unfold({d}, 2, 1)", 1), ("{a}.unfold({d}, 1, 2)", 1),
    ("torch.narrow({a}, {d}, torch.tensor(0), 1)", 1), ("{a}.diagonal(1, 0, -1)", 2),
]
# dtype promotion across int / bool / float16 / complex operands ({ib}, {bb}: an int and a bool
# leaf of a broadcast shape, {f}: a float32 one without grad); no bfloat16 (docs/differences.md)
WIDE_PROMOTE = [
    ("{a} + {ib}", 0), ("{ib} * {a}", 0), ("{a} - {bb}", 0), ("{a} * {bb}", 0),
    ("torch.add({ib}, {a}, alpha=2)", 0), ("{a} / {ib}", 0), ("{a} ** {ib}", 0),
    ("{ib} ** {a}", 0), ("torch.where({m}, {a}, {ib})", 0), ("torch.where({m}, {a}, 2)", 0),
    ("torch.where({m}, 1.5, {a})", 0), ("{a} + {f}.half()", 0), ("{a}.half() * {f}.half()", 0),
    ("{a}.half() + 1.5", 0), ("{a}.half().exp().float()", 0), ("{a}.half().sigmoid().double()", 0),
    ("{a}.half().sum({ds})", 0), ("{a}.half().mean()", 0), ("{a}.half().tanh()", 0),
    ("{a} + 1j", 0), ("{a} * torch.tensor(2 - 1j)", 0), ("{a} + {f}.to(torch.complex64)", 0),
    ("torch.cat([{a}, {a}.half()])", 1), ("torch.cat([{a}.half(), {ib}], -1)", 1),
    ("torch.stack([{a}, {a}.double()])", 0), ("torch.maximum({a}, {ib})", 0),
    ("torch.minimum({bb}, {a})", 0), ("{a} + torch.tensor(3)", 0),
    ("{a} + torch.tensor(2.0, dtype=torch.float64)", 0), ("{a}.float() + torch.tensor([2.0], "
                                                          "dtype=torch.float64)", 0),
    ("{a} * torch.tensor(True)", 0), ("{a}.half() + torch.tensor(2.0)", 0),
    ("{a} + torch.tensor(1, dtype=torch.uint8)", 0), ("{ib} / 2", 0), ("{ib} // 2", 0),
    ("{ib} * 1.5 + {a}", 0), ("{bb} + {bb}", 0), ("{ib}.sum() + {a}", 0), ("{ib}.mean()", 0),
    ("{bb}.sum({ds})", 0), ("torch.clamp({ib}, 0.5) * {a}", 0), ("{a}.clamp({ib})", 0),
    ("{a}.lerp({f}.double(), 0.5)", 0), ("torch.addcmul({a}, {ib}, {a}, value=2)", 0),
    ("torch.result_type({a}, {ib})", 0), ("torch.promote_types({a}.dtype, torch.float16)", 0),
    ("{a}.to(torch.int32) + {a}", 0), ("{a}.int().float().requires_grad", 0),
    ("{a}.type(torch.float16)", 0), ("{a}.half().double() - {a}", 0),
    ("torch.sum({ib}, dtype=torch.float32)", 0), ("{a}.new_tensor([1, 2]).dtype", 0),
    ("{a}.half() @ {f}.half().mT if {a}.dim() >= 2 else {a}.half().sum()", 0),
    ("torch.atan2({a}, {ib})", 0), ("torch.fmod({a}, {ib}.abs() + 1)", 0),
    ("torch.remainder({ib}, {a})", 0), ("torch.copysign({ib}, {a})", 0),
    ("torch.hypot({a}, {f}.half())", 0), ("torch.xlogy({ib}, {a})", 0),
]
WIDE = {"unary": WIDE_UNARY, "copy": WIDE_COPY, "linalg": WIDE_LINALG, "inplace": WIDE_INPLACE,
        "act": WIDE_ACT, "loss": WIDE_LOSS, "reduce": WIDE_REDUCE, "index": WIDE_INDEX,
        "promote": WIDE_PROMOTE}


@gen(8)
def g_wide(g):
    r = g.r
    table = r.choice(list(WIDE))
    if table == "inplace":
        a = g.pick_float(lambda m: not (m.leaf and m.rg) or r.random() < 0.1)
    else:
        a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    fmt = r.choice([code for code, least in WIDE[table] if m.nd >= least])
    fill = wide_fill(g, a, fmt)
    if fill is not None:
        g.add(fmt.format(**fill), nograd=r.random() < 0.08)


# (session 29) Ops of tapegrad's public surface the tables above never drew: elementwise math,
# shape builders, reductions and products, and in-place methods (view-changing ones too).  Drawn
# only by seeds >= EXTRA_FROM, so the programs of lower seeds stay what they were.  ({tg}: a
# second float of {a}'s shape that requires grad, {e}: embedding indices into {a}'s rows.)
EXTRA_FROM = 65_000_000
WIDE_EXTRA = [
    ("torch.logaddexp({a}, {b})", 0), ("torch.logaddexp2({a}, {tg})", 0),
    ("torch.fmax({a}, {b})", 0), ("torch.fmin({a}, {tg})", 0), ("torch.float_power({a}, 2)", 0),
    ("torch.float_power({a}.abs(), {b})", 0), ("torch.heaviside({a}, {tg})", 0),
    ("torch.ldexp({a}, {ib})", 0), ("torch.frexp({a})[0]", 0), ("torch.lgamma({a})", 0),
    ("torch.tan({a})", 0), ("torch.cosh({a})", 0), ("torch.acos({a}.clamp(-1, 1))", 0),
    ("torch.acosh({a}.abs() + 1)", 0), ("torch.asinh({a})", 0), ("torch.atanh({a}.tanh())", 0),
    ("torch.rad2deg({a})", 0), ("torch.fix({a})", 0), ("torch.rsub({a}, {b})", 0),
    ("torch.floor_divide({a}, {b})", 0), ("torch.true_divide({a}, {b})", 0),
    ("torch.addcdiv({a}, {b}, {tg}, value=0.5)", 0), ("torch.addcmul({a}, {b}, {tg}, value=-2)", 0),
    ("torch.clamp_min({a}, {tg})", 0), ("torch.clamp({a}, min={tg}, max={t})", 0),
    ("torch.lerp({a}, {tg}, {t}.sigmoid())", 0), ("torch.lerp({a}, {b}, 0.25)", 0),
    ("torch.special.xlog1py({a}, {b})", 0), ("torch.nextafter({a}, {tg})", 0),
    ("torch.sgn({a})", 0), ("torch.cross({a}, {tg}, dim={d})", 1),
    ("torch.tile({a}, (2,))", 0), ("{a}.repeat_interleave(2, dim={d})", 1),
    ("torch.repeat_interleave({a}, 2)", 0), ("torch.rot90({a}, {k01} + 1, (0, -1))", 2),
    ("torch.tril({a}, -1)", 2), ("torch.triu({a}, {k01})", 2), ("torch.diag_embed({a})", 1),
    ("torch.diagflat({a})", 0), ("torch.block_diag({a}, {tg})", 0),
    ("torch.broadcast_to({a}, (2,) + tuple({a}.shape))", 0), ("torch.atleast_3d({a})", 0),
    ("torch.hstack([{a}, {tg}])", 0), ("torch.vstack([{a}, {tg}])", 0),
    ("torch.dstack([{a}, {tg}])", 0), ("torch.column_stack([{a}, {tg}])", 0),
    ("torch.tensor_split({a}, 3, {d})[1]", 1), ("torch.fliplr({a})", 2), ("torch.flipud({a})", 1),
    ("torch.swapdims({a}, 0, -1)", 1), ("{a}.sum_to_size(({n},))", 1),
    ("{a}.reshape_as({tg})", 0), ("torch.unflatten({a}, {d}, (1, -1))", 1),
    ("torch.kthvalue({a}, 1, {d}, {kd}).values", 1), ("torch.msort({a})", 1),
    ("torch.dist({a}, {tg}, {p})", 0), ("torch.cov({a})", 1), ("torch.corrcoef({a})", 1),
    ("torch.trapezoid({a}, dim={d})", 1), ("torch.cumulative_trapezoid({a}, dim={d})", 1),
    ("torch.diff({a}, dim={d})", 1), ("torch.logdet({s})", 0), ("torch.cdist({a}, {tg}, p={pm})", 2),
    ("torch.kron({a}, {tg})", 0), ("torch.tensordot({a}, {tg}, dims=([{d}], [{d}]))", 1),
    ("torch.inner({a}, {tg})", 0), ("torch.vdot({a}.reshape(-1), {tg}.reshape(-1))", 0),
    ("torch.renorm({a}, {pm}, 0, 0.5)", 1), ("torch.prod({a}, dtype=torch.float64)", 0),
    ("F.embedding({e}, {a})", 2), ("F.embedding({e}, {a}, padding_idx=0)", 2),
    ("F.pixel_shuffle({a}, 1)", 3), ("F.pdist({a})", 2), ("F.lp_pool1d({a}, 2, 2)", 2),
    ("F.alpha_dropout({a}, 0.5, training=False)", 0),
]
# in-place methods, on non-leaves as g_inplace picks (the view-changing ones alter the variable's
# own shape and strides)
EXTRA_INPLACE = [
    ("{a}.t_()", 1), ("{a}.transpose_(0, -1)", 1), ("{a}.unsqueeze_(0)", 0), ("{a}.squeeze_()", 0),
    ("{a}.swapdims_(0, -1)", 1), ("{a}.index_add_({d}, {id}, {src})", 1),
    ("{a}.index_copy_({d}, {idu}, {src})", 1), ("{a}.scatter_({d}, {ix}, {tg})", 1),
    ("{a}.scatter_add_({d}, {ix}, {tg})", 1), ("{a}.scatter_reduce_({d}, {ix}, {tg}, '{sr}')", 1),
    ("{a}.masked_scatter_({m}, {tg})", 0), ("{a}.put_({iflat}, {vflat})", 0),
    ("{a}.index_put_(({i0},), {src0})", 1), ("{a}.lerp_({tg}, {t}.sigmoid())", 0),
    ("{a}.clamp_({tg})", 0), ("{a}.neg_()", 0), ("{a}.ldexp_({ib})", 0), ("{a}.acos_()", 0),
    ("{a}.atanh_()", 0), ("{a}.rad2deg_()", 0), ("{a}.fix_()", 0), ("{a}.true_divide_({b})", 0),
    ("{a}.floor_divide_({b})", 0), ("{a}.logit_(0.1)", 0), ("{a}.float_power_({b})", 0),
]


def table_op(g, wide, inplace_table):
    """One op drawn from a pair of format tables (out of place / in place, 3 in 10), each entry
    (format, least operand rank), filled by wide_fill."""
    r = g.r
    inplace = r.random() < 0.3
    if inplace:
        a = g.pick_float(lambda m: not (m.leaf and m.rg) or r.random() < 0.1)
    else:
        a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    fmt = r.choice([code for code, least in (inplace_table if inplace else wide)
                    if m.nd >= least])
    fill = wide_fill(g, a, fmt)
    if fill is not None:
        g.add(fmt.format(**fill), nograd=r.random() < 0.08)


def g_extra(g):
    """One op of WIDE_EXTRA / EXTRA_INPLACE (drawn only by seeds >= EXTRA_FROM)."""
    table_op(g, WIDE_EXTRA, EXTRA_INPLACE)


# (session 43) Operands of two floating dtypes where PyTorch's rule is not the promotion of
# binary ops, and ATen entry points nn.functional's wrappers hide: rms_norm's weight of any
# dtype (PyTorch multiplies it in by promotion, the result in the input's dtype), the losses
# whose result keeps the input's dtype or that refuse another target dtype, the normalisations'
# parameter-dtype rule, joins of float16 / bfloat16 / float32 operands (under autocast:
# PyTorch's prioritize), the log products, and torch.batch_norm / native_* (no batch-size check).
# Drawn only by seeds >= MIXED_FROM, so the programs of lower seeds stay what they were.
MIXED_FROM = 67_000_000
WIDE_MIXED = [
    ("F.rms_norm({a}, {a}.shape[-1:], {w}.to(torch.float64))", 1),
    ("F.rms_norm({a}, {a}.shape[-1:], {w}.to(torch.float32))", 1),
    ("F.rms_norm({a}, {a}.shape[-1:], {w}.to(torch.bfloat16))", 1),
    ("F.rms_norm({a}, {a}.shape[-1:], {w}.to(torch.float16), eps=1e-3)", 1),
    ("F.rms_norm({a}.to(torch.float16), {a}.shape[-1:], {w})", 1),
    ("F.layer_norm({a}, {a}.shape[-1:], {w}.to(torch.float32), {w}.to(torch.bfloat16))", 1),
    ("F.group_norm({a}, 1, {w1}.to(torch.bfloat16))", 2),
    ("torch.native_layer_norm({a}, {a}.shape[-1:], {w}.to(torch.float32), None, 1e-5)[0]", 1),
    ("torch.native_layer_norm({a}, {a}.shape[-1:], {w}, {w}, 1e-5)[2]", 1),
    ("torch.native_group_norm({a}, {w1}, None, {a}.shape[0], {a}.shape[1], "
     "{a}[0, 0].numel(), 1, 1e-5)[0]", 2),
    # (a weight of the channels' size: PyTorch's native kernel reads a shorter one out of
    # bounds, 67000472)
    ("torch.native_batch_norm({a}, {a}.new_ones({a}.shape[1]) * 1.5, None, None, None, True, "
     "0.1, 1e-5)[0]", 2),
    ("torch.batch_norm({a}, {w1}, {w1}, None, None, True, 0.1, 1e-5, False)", 2),
    ("F.huber_loss({a}, {tg}.to(torch.float64), reduction='{red}')", 0),
    ("F.huber_loss({a}.to(torch.bfloat16), {tg}, reduction='{red}')", 0),
    ("F.soft_margin_loss({a}, {tg}.detach().to(torch.float16), reduction='{red}')", 0),
    ("F.binary_cross_entropy({a}.sigmoid(), {t}.sigmoid().to(torch.float64))", 0),
    ("F.binary_cross_entropy({a}.sigmoid(), {t}.sigmoid(), weight={tg}.to(torch.float64))", 0),
    ("F.mse_loss({a}, {tg}.to(torch.float16), reduction='{red}')", 0),
    ("F.kl_div({a}.log_softmax(-1), {tg}.softmax(-1).to(torch.float64), reduction='{red}')", 0),
    ("torch.stack([{a}, {tg}.to(torch.float16)])", 0),
    ("torch.stack([{a}.to(torch.float16), {tg}.to(torch.float16)])", 0),
    ("torch.cat([{a}.to(torch.bfloat16), {tg}])", 0),
    ("torch.xlogy({a}, {b})", 0), ("torch.xlogy({a}.abs(), 0.1)", 0),
    ("torch.special.entr({a})", 0), ("torch.special.xlogy(0.3, {tg}.abs())", 0),
]


def g_mixed(g):
    """One op of WIDE_MIXED (drawn only by seeds >= MIXED_FROM)."""
    r = g.r
    a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    fmt = r.choice([code for code, least in WIDE_MIXED if m.nd >= least])
    fill = wide_fill(g, a, fmt)
    if fill is not None:
        g.add(fmt.format(**fill), nograd=r.random() < 0.08)


# (session 44) Public ops no table above drew (tools' own survey: names of torch, Tensor, F,
# linalg and special that tapegrad has and no generator's source names): inverses and solves
# under older names, searches, combinatorics, Vandermonde matrices, the splits by dims, the
# rarer special polynomials and Bessel functions, comparisons and logical ops by their aliases,
# nn.functional's in-place activations and Tensor's in-place products (addmm_ / addbmm_ /
# baddbmm_ / addr_ / addmv_, on views too) and in-place comparisons of floats.  Drawn only by
# seeds >= BLIND_FROM, so the programs of lower seeds stay what they were.
BLIND_FROM = 67_100_000
WIDE_BLIND = [
    ("torch.pinverse({a})", 2), ("torch.pinverse({a}, rcond=0.3)", 2), ("torch.inverse({s})", 0),
    ("torch.triangular_solve({a}.mT, {s}.tril() + 3 * torch.eye({n}, dtype={a}.dtype), "
     "upper=False)[0]", 2),
    ("torch.triangular_solve({a}.mT, {s}.triu() + 3 * torch.eye({n}, dtype={a}.dtype), "
     "transpose=True, unitriangular={kd}).solution", 2),
    ("torch.searchsorted({a}.sort(-1).values, {t}, right={kd})", 1),
    ("torch.searchsorted({a}.detach().reshape(-1).sort().values, {tg}, side='right')", 0),
    ("torch.isin({a}, {tg})", 0), ("torch.isin({a}.round(), {b}.round(), invert=True)", 0),
    ("torch.unique_consecutive({a}.round())", 0),
    ("torch.unique_consecutive({a}.round(), return_counts=True, dim={d})[1]", 1),
    ("torch.unique_consecutive({a}.round(), return_inverse=True)[1]", 0),
    ("torch.cartesian_prod({a}.reshape(-1)[:3], {tg}.reshape(-1)[:2])", 0),
    ("torch.combinations({a}.reshape(-1)[:4])", 0),
    ("torch.combinations({a}.reshape(-1)[:3], 3, with_replacement=True)", 0),
    ("torch.vander({a}.reshape(-1)[:4], 3)", 0), ("torch.vander({a}.reshape(-1), increasing=True)", 0),
    ("torch.linalg.vander({a})", 1), ("torch.linalg.vander({a}, N=3)", 1),
    ("torch.linalg.tensorsolve({s}, {w})", 0), ("torch.moveaxis({a}, 0, -1)", 1),
    ("{a}.moveaxis(-1, 0)", 1), ("torch.hsplit({a}, [1])[-1]", 1), ("torch.vsplit({a}, [1])[0]", 2),
    ("torch.dsplit({a}, [1, 2])[1]", 3), ("{a}.split_with_sizes([1, {a}.shape[0] - 1])[1]", 1),
    ("torch.chain_matmul({a}, {a}.mT, {a})", 2), ("torch.nuclear_norm({a})", 2),
    ("torch.nuclear_norm({a}, keepdim={kd})", 2), ("torch.frobenius_norm({a}, (-2, -1))", 2),
    ("torch.clamp_max({a}, {tg})", 0), ("torch.arctan2({a}, {tg})", 0),
    ("torch.arccosh({a}.abs() + 1)", 0), ("torch.arcsinh({a})", 0), ("torch.deg2rad({a})", 0),
    ("torch.subtract({a}, {b}, alpha=2)", 0), ("torch.multiply({a}, {b})", 0),
    ("torch.divide({a}, {tg}, rounding_mode='trunc')", 0), ("torch.logical_xor({a}, {tg})", 0),
    ("torch.logical_not({a})", 0), ("torch.isneginf({a} / 0)", 0), ("torch.isreal({a})", 0),
    ("torch.greater_equal({a}, {b})", 0), ("torch.not_equal({a}, {b})", 0),
    ("torch.trapz({a}, dim={d})", 1), ("torch.atleast_2d({a})", 0),
    ("torch.row_stack([{a}, {tg}])", 0), ("torch.concat([{a}, {tg}], {d})", 1),
    ("torch.broadcast_tensors({a}, {b})[0]", 0),
    ("torch.as_strided({a}.reshape(-1), (2, 2), (1, 1))", 0),
    ("torch.as_strided({a}.contiguous(), (2,), (2,), 1)", 0),
    ("{a}[..., torch.triu_indices({n}, {n}, 1)[1]]", 1),
    ("{a}.reshape(-1)[torch.tril_indices(2, 2)[0]]", 0),
    ("torch.logspace(0, 1, {n}, base=2.0, dtype={a}.dtype) * {a}", 0),
    ("torch.special.bessel_j1({a})", 0), ("torch.special.bessel_y0({a}.abs())", 0),
    ("torch.special.bessel_y1({a}.abs() + 0.5)", 0), ("torch.special.modified_bessel_i0({a})", 0),
    ("torch.special.modified_bessel_i1({a})", 0), ("torch.special.modified_bessel_k0({a}.abs())", 0),
    ("torch.special.scaled_modified_bessel_k0({a}.abs())", 0),
    ("torch.special.scaled_modified_bessel_k1({a}.abs() + 0.1)", 0),
    ("torch.special.legendre_polynomial_p({a}, 3)", 0),
    ("torch.special.laguerre_polynomial_l({a}, 2)", 0),
    ("torch.special.hermite_polynomial_he({a}, 4)", 0),
    ("torch.special.chebyshev_polynomial_u({a}, 3)", 0),
    ("torch.special.chebyshev_polynomial_w({a}, 2)", 0),
    ("torch.special.shifted_chebyshev_polynomial_t({a}, {tg}.detach().round().abs())", 0),
    ("torch.special.shifted_chebyshev_polynomial_v({a}, 3)", 0),
]
# in-place: nn.functional's in-place activations, Tensor's in-place products (self of the
# product's shape: {a} 2-d, a row of it, a slice of a 3-d one) and in-place comparisons and
# logical ops on floats (their results 0 / 1 in {a}'s dtype)
BLIND_INPLACE = [
    ("F.elu_({a})", 0), ("F.celu_({a}, 0.5)", 0), ("F.selu_({a})", 0),
    ("F.hardtanh_({a}, -0.5, 0.5)", 0), ("F.leaky_relu_({a}, 0.2)", 0),
    ("F.threshold_({a}, 0.1, 20.0)", 0), ("F.rrelu_({a}, training=False)", 0),
    ("{a}.addmm_({t}[..., :1], {tg}[..., :1, :], beta=0.5, alpha=2)", 2),
    ("{a}[0].addbmm_({t}[..., :1], {tg}[..., :1, :])", 3),
    ("{a}.baddbmm_({t}[..., :1], {tg}[..., :1, :], alpha=0.5)", 3),
    ("{a}.addr_({t}[..., 0], {tg}[0])", 2), ("{a}[:, 0].addmv_({t}, {tg}[0])", 2),
    ("{a}.heaviside_({tg})", 0), ("{a}.nextafter_({tg})", 0), ("{a}.arctan2_({tg})", 0),
    ("{a}.clamp_max_(0.3)", 0), ("{a}.subtract_({b}, alpha=0.5)", 0), ("{a}.multiply_({b})", 0),
    ("{a}.divide_({b}, rounding_mode='floor')", 0), ("{a}.lt_({b})", 0), ("{a}.eq_(0)", 0),
    ("{a}.greater_({tg})", 0), ("{a}.logical_and_({b})", 0), ("{a}.logical_not_()", 0),
    ("{a}.not_equal_({tg})", 0), ("{a}.arccosh_()", 0), ("{a}.i0_()", 0),
    ("{a}.index_reduce_({d}, {id}, {src}, '{ir}', include_self={kd})", 1),
]


def g_blind(g):
    """One op of WIDE_BLIND / BLIND_INPLACE (drawn only by seeds >= BLIND_FROM)."""
    table_op(g, WIDE_BLIND, BLIND_INPLACE)


# (session 45) Argument forms the tables above hand an op only by chance: each step takes a
# variable in a layout or kind of its own - transposed, strided, flipped, permuted, expanded (zero
# strides, PyTorch's writes refuse them), one element broadcast to a shape, emptied along a dim,
# reduced to 0-d, cast to an integer or bool dtype - and hands it to a reduction (negative dims,
# dim tuples, keepdim), a scan, a float op (integer and bool inputs promote to the default float
# dtype or are refused), a binary op with a 0-d tensor of another dtype (0-d operands do not take
# part in promotion between floats), an in-place op on such a view (self non-contiguous, other
# expanded), or an out= write into a transposed or strided view of the result's shape.  Drawn
# only by seeds >= FORMS_FROM, so the programs of lower seeds stay what they were.
FORMS_FROM = 67_200_000
# (source of the form of {a}, least rank)
FORMS = [
    ("{a}.mT", 2), ("{a}.transpose(0, -1)", 2), ("{a}[..., ::2]", 1), ("{a}.flip(-1)", 1),
    ("{a}.permute({rev})", 3), ("{a}.unsqueeze(0).expand(2, *{a}.shape)", 0),
    ("{a}.unsqueeze(-1).expand(*{a}.shape, 3)", 0), ("{a}.reshape(-1)[:1].expand(2, 3)", 0),
    ("{a}[..., :0]", 1), ("{a}.sum()", 0), ("{a}.detach().round().to(torch.int64)", 0),
    ("{a}.detach().round().to(torch.int32).mT", 2), ("({a} > 0)", 0), ("({a} > 0).mT", 2),
    ("{a}.detach().to(torch.uint8)", 0), ("{a}", 0), ("{a}[1:]", 1),
]
FORM_REDUCE = [
    "{x}.sum({ds}, keepdim={kd})", "{x}.mean({d}, keepdim={kd})", "{x}.prod({d}, keepdim={kd})",
    "{x}.amax({ds}, keepdim={kd})", "{x}.amin({ds})", "{x}.max({d}, keepdim={kd})[0]",
    "{x}.min({d}, {kd}).indices", "{x}.argmax({d}, keepdim={kd})", "{x}.argmin()",
    "{x}.var({ds}, correction={cor}, keepdim={kd})", "{x}.std({d})",
    "torch.var_mean({x}, {ds}, keepdim={kd})[0]", "torch.std_mean({x}, {d})[1]",
    "{x}.logsumexp({ds}, keepdim={kd})", "{x}.norm({p}, {ds}, keepdim={kd})",
    "torch.linalg.vector_norm({x}, {p}, {ds}, {kd})", "{x}.nansum({ds})",
    "{x}.nanmean({d}, keepdim={kd})", "{x}.median({d}, keepdim={kd}).values", "{x}.median()",
    "{x}.nanmedian({d}).values", "{x}.mode({d}, {kd}).values", "{x}.cumsum({d})",
    "{x}.cumprod({d})", "{x}.cummax({d}).values", "{x}.cummin({d}).indices",
    "{x}.logcumsumexp({d})", "{x}.all({d}, keepdim={kd})", "{x}.any({ds})",
    "{x}.count_nonzero({ds})", "torch.aminmax({x}, dim={d}, keepdim={kd}).min",
    "{x}.softmax({d})", "{x}.log_softmax({d}, dtype=torch.float64)",
    "{x}.sort({d}, descending=True).values", "{x}.topk(1, {d}).values",
    "{x}.kthvalue(1, {d}, {kd}).values", "{x}.quantile(0.3, {d}, keepdim={kd})",
    "{x}.sum(dtype=torch.float64)", "{x}.sum({d}, dtype=torch.int64)", "{x}.diff(dim={d})",
    "{x}.mean(dtype=torch.float64)", "torch.trapezoid({x}, dim={d})", "{x}.unique(dim={d})",
    "torch.cumulative_trapezoid({x}, dim={d})",
]
FORM_FLOAT = [
    "{x}.sin()", "{x}.exp()", "{x}.sqrt()", "{x}.sigmoid()", "torch.log1p({x})",
    "{x}.reciprocal()", "{x} / 2", "{x} / {y}", "torch.true_divide({x}, {y})", "{x}.rsqrt()",
    "torch.erf({x})", "torch.special.expit({x})", "{x}.float_power(2)", "{x} ** -1",
    "{x}.pow(0.5)", "{x}.mean()", "torch.atan2({x}, {y})", "{x}.abs()", "{x}.neg()", "-{x}",
    "{x}.floor()", "{x}.round(decimals=1)", "{x}.sign()", "{x}.sgn()", "torch.clamp({x}, 0.5)",
    "torch.clamp({x}, max={y})", "{x}.frac()", "torch.nan_to_num({x})", "{x}.logit()",
    "torch.hypot({x}, {y})", "{x} // {y}", "{x} % {y}", "torch.fmod({x}, 1.5)", "{x}.exp2()",
    "{x}.square()", "torch.lerp({x}, {y}, 0.5)", "torch.special.ndtr({x})", "{x}.log2()",
    "torch.sinc({x})", "torch.heaviside({x}, {y})", "{x}.trunc()", "{x}.ceil()",
    "torch.xlogy({x}, {y})", "torch.logaddexp({x}, {y})", "torch.copysign({x}, {y})",
    "torch.where({x} > 0, {x}, {y})", "torch.maximum({x}, {y})", "{x}.addcmul({y}, {y}, value=2)",
    "torch.mul({x}, {y})", "{x} + {y}", "{x} - {y}", "{x} * 1.5", "2 ** {x}", "{x}.isnan()",
    "torch.softmax({x}, -1)", "torch.cumsum({x}, -1)", "torch.square({x}) * {y}",
]
# {y}: the other operand - a 0-d tensor of another dtype, a Python number, the same form of
# another variable, or a variable that broadcasts
FORM_ZERO_D = [
    "torch.tensor(2.5, dtype=torch.float64)", "torch.tensor(-1.5, dtype=torch.float16)",
    "torch.tensor(3)", "torch.tensor(True)", "torch.tensor(0.5, dtype=torch.float32)",
    "torch.tensor(-2, dtype=torch.int8)", "torch.tensor(1.25, dtype=torch.bfloat16)",
    "torch.tensor(0.75, dtype=torch.float64, requires_grad=True)",
]
FORM_INPLACE = [
    "{t}.add_({y})", "{t}.mul_({y})", "{t}.sub_({y}, alpha=2)", "{t}.div_({y})",
    "{t}.clamp_(min={y})", "{t}.copy_({y})", "{t}.lerp_({y}, 0.25)", "{t}.addcmul_({y}, {y})",
    "{t}.masked_fill_({t} > 0, {y0})", "{t}.pow_(2)", "{t}.sigmoid_()", "{t}.div_(2)",
    "{t}.add_(1.5)", "{t}.cumsum_({d})", "{t}.exp_()", "{t}.zero_()", "{t}.fill_({y0})",
    "{t}.abs_()", "{t}.floor_()", "{t}.atan2_({y})", "{t}.maximum({y})",
]
FORM_OUT = [
    "torch.add({x}, {y}, out={o})", "torch.mul({x}, 2, out={o})", "torch.exp({x}, out={o})",
    "torch.sum({x}, {d}, keepdim=True, out={o})", "torch.cumsum({x}, {d}, out={o})",
    "torch.clamp({x}, -0.5, 0.5, out={o})", "torch.neg({x}, out={o})",
    "torch.amax({x}, {d}, True, out={o})", "torch.sort({x}, {d}, out=({o}, {oi}))",
    "torch.max({x}, {d}, True, out=({o}, {oi}))", "torch.matmul({x}, {x}.mT, out={o})",
    "torch.where({x} > 0, {x}, {y}, out={o})", "torch.sigmoid({x}, out={o})",
]
FORM_OUT_ELEMENTWISE = frozenset(fmt for fmt in FORM_OUT if re.match(
    r"torch\.(add|mul|exp|clamp|neg|where|sigmoid)\(", fmt))
# how the out view is made from a fresh tensor of the result's shape {shape} reversed ({rev}:
# the permutation back), of twice its last dim, or expanded from one element
FORM_OUT_VIEWS = [
    "torch.zeros({revshape}, dtype=torch.{dt}).permute({rev})",
    "torch.zeros({dblshape}, dtype=torch.{dt})[..., ::2]",
    "torch.zeros({shape}, dtype=torch.{dt}).flip(-1)",
    "torch.zeros(1, dtype=torch.{dt}).expand({shape})",
]


def _dims_fill(r, nd):
    """A dim (often negative) and a dim tuple of rank nd (negative dims, now and then repeated or
    out of range for PyTorch's error)."""
    if not nd:
        return r.choice([0, -1]), r.choice(["()", "(0,)", "(-1,)", "(0, -1)"])
    d = r.randrange(-nd, nd) if r.random() < 0.97 else r.choice([nd, -nd - 1])
    dims = [x - nd if r.random() < 0.5 else x for x in r.sample(range(nd), r.randint(1, nd))]
    if r.random() < 0.04:
        dims = dims + dims[:1]
    return d, f"({', '.join(map(str, dims))}{',' if len(dims) == 1 else ''})"


def _form_of(g, a):
    """An expression of variable a in a drawn form, with its torch value, or (None, None)."""
    r, m = g.r, g.meta[a]
    code = r.choice([f for f, least in FORMS if m.nd >= least])
    code = code.format(a=a, rev=tuple(reversed(range(m.nd))))
    try:
        return code, eval(code, g.ns)
    except Exception:  # noqa: BLE001 - torch refuses the form itself: draw no step
        return None, None


def _form_other(g, x, xv, a):
    """The other operand of a binary op on form x (value xv) of variable a."""
    r = g.r
    u = r.random()
    if u < 0.35:
        return r.choice(FORM_ZERO_D)
    if u < 0.5:
        return repr(r.choice([2, -3, 0.5, -1.5, True]))
    if u < 0.7 and xv.dim():
        # the same form of another variable of a's shape, or of a's own values (aliasing)
        same = g.vars(lambda mm: mm.shape == g.meta[a].shape)
        b = r.choice(same) if same else a
        return re.sub(rf"\b{a}\b", b, x)
    if xv.dim() and r.random() < 0.5:
        # one row broadcast (an expanded operand)
        return g.leaf((1,) * (xv.dim() - 1) + (xv.shape[-1],), r.choice(FLOATS))
    return g.leaf(tuple(xv.shape), r.choice(FLOATS))


def g_forms(g):
    """One op of FORM_* on a form of a variable (drawn only by seeds >= FORMS_FROM)."""
    r = g.r
    a = g.pick(lambda m: not m.cplx)
    if a is None:
        return
    x, xv = _form_of(g, a)
    if x is None:
        return
    d, ds = _dims_fill(r, xv.dim())
    fill = {"x": x, "d": d, "ds": ds, "kd": r.random() < 0.5, "cor": r.choice([0, 1, 2]),
            "p": r.choice([1, 2, 3, 0.5, "float('inf')", 0])}
    kind = r.choices(["reduce", "float", "inplace", "out"], [5, 4, 3, 2])[0]
    if kind == "reduce":
        g.add(r.choice(FORM_REDUCE).format(**fill), nograd=r.random() < 0.05)
    elif kind == "float":
        fmt = r.choice(FORM_FLOAT)
        if "{y}" in fmt:
            fill["y"] = _form_other(g, x, xv, a)
            if fill["y"] is None:
                return
        g.add(fmt.format(**fill), nograd=r.random() < 0.08)
    elif kind == "inplace":
        # on a view of a non-leaf (a copy of a leaf that requires grad, made a step of its own),
        # so the write reaches a variable compared after the body
        if g.meta[a].leaf and g.meta[a].rg and r.random() < 0.9:
            old, a = a, g.add(f"{a} * 1")
            if a is None:
                return
            x = re.sub(rf"\b{old}\b", a, x)
        fill["t"] = x
        fmt = r.choice(FORM_INPLACE)
        fill["y"] = _form_other(g, x, xv, a) if "{y}" in fmt else None
        fill["y0"] = r.choice(["-0.5", "torch.tensor(2.0, dtype=torch.float64)", "True",
                               f"{a}.sum()"])
        if "{y}" in fmt and fill["y"] is None:
            return
        g.add(fmt.format(**fill), nograd=r.random() < 0.15)
    else:
        _form_out(g, a, x, fill)


def _form_out(g, a, x, fill):
    r = g.r
    fmt = r.choice(FORM_OUT)
    if "{y}" in fmt:
        fill["y"] = r.choice(FORM_ZERO_D[:5] + [x])
    plain = fmt.replace(", out=({o}, {oi})", "").replace(", out={o}", "")
    nograd = r.random() < 0.8
    try:
        with contextlib.ExitStack() as stack:
            if nograd:
                stack.enter_context(g.torch.no_grad())
            res = eval(plain.format(**fill), g.ns)
    except Exception:  # noqa: BLE001 - torch refuses the op itself: no out= to draw
        return
    outs = res if isinstance(res, tuple) else (res,)
    names = []
    for v in outs[:2]:
        if not is_tensor(v):
            return
        sh = tuple(v.shape)
        # (an expanded out only for the elementwise ops: PyTorch writes a reduction's or a
        # product's result into one without checking, the survivor its loop order's, 67201120)
        views = FORM_OUT_VIEWS if fmt in FORM_OUT_ELEMENTWISE else FORM_OUT_VIEWS[:3]
        view = r.choice(views if sh else views[2:])
        if view.endswith(".flip(-1)") or r.random() < 0.2:
            view = "torch.zeros({shape}, dtype=torch.{dt})"      # (flip copies: a plain out)
        src = view.format(shape=sh, revshape=tuple(reversed(sh)), rev=tuple(reversed(range(len(sh)))),
                          dblshape=sh[:-1] + (2 * sh[-1],) if sh else (2,),
                          dt=str(v.dtype).split(".")[-1])
        # (the out view is a step of its own and the write is compared through its base)
        base = g.add(src.split(".permute")[0].split("[")[0].split(".expand")[0])
        if base is None:
            return
        names.append(base + src[len(src.split(".permute")[0].split("[")[0].split(".expand")[0]):])
    fill["o"] = names[0]
    fill["oi"] = names[1] if len(names) > 1 else None
    g.add(fmt.format(**fill), nograd=nograd)


# (session 46) What scripts do around ops, which the tables above draw on whole variables only:
# chains of views (unfold, as_strided, diagonal, narrow, select, chunk, unbind, expand, ...)
# handed to a reduction or written in place (through the view, the base must change; an
# overlapping or expanded view refuses the write); tensor hooks and retain_grad around in-place
# writes (a hook registered before the write sees the gradient of the value before it);
# no_grad / enable_grad / inference_mode nestings and inference tensors used afterwards
# (PyTorch's errors for saving one or writing it outside the mode); requires_grad on integer
# and bool tensors (its error, by every spelling); and nn modules called with odd shapes
# (0-batch, unbatched, 1-sample batches in training) whose parameters are the program's leaves,
# so their gradients are compared too.  Drawn only by seeds >= CHAINS_FROM, so the programs of
# lower seeds stay what they were.
CHAINS_FROM = 67_300_000
# (view of {x}, least rank, whether a write through it is well defined: no two elements share
# memory)
CHAIN_VIEWS = [
    ("{x}.unfold({d}, 2, 2)", 1, True), ("{x}.unfold({d}, 1, 2)", 1, True),
    ("{x}.unfold({d}, 2, 1)", 1, False), ("{x}.diagonal()", 2, True),
    ("{x}.diagonal(1, -2, -1)", 2, True), ("{x}.diagonal(-1, 0, -1)", 2, True),
    ("{x}.narrow({d}, 0, 1)", 1, True), ("{x}.narrow({d}, -1, 1)", 1, True),
    ("{x}.select({d}, -1)", 1, True), ("{x}.movedim(0, -1)", 1, True),
    ("{x}.unflatten(-1, (1, -1))", 1, True), ("{x}.mT", 2, True), ("{x}[::2]", 1, True),
    ("{x}[..., 1:]", 1, True), ("{x}[None]", 0, True), ("{x}.chunk(2, {d})[-1]", 1, True),
    ("{x}.split(1, {d})[0]", 1, True), ("{x}.unbind({d})[0]", 1, True),
    ("{x}.tensor_split(3, {d})[1]", 1, True), ("{x}.squeeze()", 0, True),
    ("{x}.view(-1)", 0, True), ("{x}.swapdims(0, -1)", 1, True), ("{x}.detach()", 0, True),
    ("{x}.expand(2, *{x}.shape)", 0, False), ("{x}.unsqueeze(-1).expand(*{x}.shape, 2)", 0, False),
    ("{x}.as_strided(({n2}, 2), (2, 1))", 0, True), ("{x}.as_strided((2,), (0,))", 0, False),
    ("{x}.as_strided((2, 2), (1, 1), 0)", 0, False), ("{x}.view_as({x})", 0, True),
    ("{x}.flatten(0)", 0, True), ("{x}.reshape(-1)", 0, True),
]
CHAIN_REDUCE = [
    "{x}.sum()", "{x}.sum({d})", "{x}.mean({d}, keepdim=True)", "{x}.amax({d})", "{x}.prod()",
    "{x}.var({d})", "{x}.logsumexp({d})", "{x}.norm()", "{x}.cumsum({d})", "{x}.softmax({d})",
    "{x}.std()", "{x}.max({d})[0]", "{x}.sort({d})[0]", "{x}.median()", "{x}.nansum()",
    "{x}.argmax({d})", "{x}.min()", "{x}.cumprod({d})", "{x}.abs().sum(({d},))",
    "{x}.clone()", "{x}.contiguous()", "{x} * {x}", "{x}.exp()", "{x} @ {x}.mT",
]
CHAIN_INPLACE = [
    "{x}.add_(1.5)", "{x}.mul_({y})", "{x}.clamp_(-0.5, 0.5)", "{x}.exp_()", "{x}.copy_({y})",
    "{x}.zero_()", "{x}.fill_(2.0)", "{x}.masked_fill_({x} > 0, 0.0)", "{x}.sigmoid_()",
    "{x}.index_fill_(-1, torch.tensor([0]), -1.0)", "{x}.neg_()", "F.relu({x}, inplace=True)",
    "F.leaky_relu_({x}, 0.2)", "{x}.addcmul_({y}, {y})", "{x}.div_({y})", "{x}.lerp_({y}, 0.3)",
    "{x}.pow_(2)", "{x}.tanh_()", "{x}.sub_({y}, alpha=0.5)", "{x}.requires_grad_(False)",
    "{x}.clamp_(min={y})", "{x}.cumsum_(-1)", "{x}.square_()", "{x}.sqrt_()",
]
# (statements: {x} a view, {b} its base, {h} a hook)
CHAIN_HOOKED = [
    ["{b}.register_hook({h})", "{b}.mul_(2)"], ["{b}.register_hook({h})", "{x}.add_(1.0)"],
    ["{x}.register_hook({h})", "{b}.mul_(-1.5)"], ["{b}.retain_grad()", "{b}.exp_()"],
    ["{b}.retain_grad()", "{x}.mul_(3)"], ["{b}.register_hook({h})", "{b}.retain_grad()",
                                          "{b}.sin_()"],
    ["{x}.register_hook({h})", "{x}.sigmoid_()"], ["{x}.retain_grad()", "{b}.add_(1)"],
]
CHAIN_HOOKS = ["lambda g: g * 2", "lambda g: None", "lambda g: g + 1", "lambda g: g.flip(-1)",
               "lambda g: g.clamp(-0.5, 0.5)", "lambda g: torch.zeros_like(g)"]
# (source around one statement `{s}` assigning a variable)
CHAIN_MODES = [
    "with torch.inference_mode():\n    {s}", "with torch.no_grad():\n    {s}",
    "with torch.no_grad():\n    with torch.enable_grad():\n        {s}",
    "with torch.inference_mode():\n    with torch.inference_mode(False):\n        {s}",
    "with torch.enable_grad():\n    with torch.inference_mode():\n        {s}",
    "with torch.set_grad_enabled(False):\n    {s}",
    "with torch.inference_mode(mode=False):\n    {s}",
    "with torch.autograd.grad_mode.set_grad_enabled(True):\n    {s}",
]
CHAIN_MODE_BODY = [
    "{x} * 2", "{x}.exp()", "{x}[0]", "{x}.view(-1)", "{x}.detach()", "{x}.clone()",
    "{x}.add_(1)", "{x}.sum()", "{x}.requires_grad_()", "{x}.detach().requires_grad_()",
    "torch.ones(2, requires_grad=True)", "{x}.is_inference()", "torch.is_grad_enabled()",
    "torch.is_inference_mode_enabled()", "{x}.mul_(2) if {x}.is_leaf else {x}",
]
# then, outside: a use of the variable `{v}` so made
CHAIN_MODE_AFTER = [
    "{v} * {x}", "{v} + {x}", "{v}.add_(1)", "{v}.clone().requires_grad_()", "{v}.is_inference()",
    "{v}.requires_grad_()", "{v}.exp()", "{v}.sum()", "torch.cat([{v}.reshape(-1), {x}.reshape(-1)])",
    "{v}.view(-1)", "{v}.detach()", "{v}[0]",
]
CHAIN_INT_RG = [
    "torch.tensor([1, 2], requires_grad=True)", "torch.zeros(2, dtype=torch.int32, requires_grad=True)",
    "torch.arange(3, requires_grad=True)", "torch.full((2,), 3, requires_grad=True)",
    "torch.empty(0, dtype=torch.long, requires_grad=True)", "{i}.requires_grad_()",
    "torch.nn.Parameter(torch.tensor([1, 2]))", "torch.nn.Parameter({i}, requires_grad=False)",
    "torch.tensor([True], requires_grad=True)", "torch.ones(1, dtype=torch.bool).requires_grad_(False)",
    "{x}.round().long().requires_grad_()", "{x}.detach().to(torch.int16).requires_grad",
    "torch.autograd.grad({x}.sum(), [{i}])", "({x} > 0).sum().backward()",
    "{x}.argmax().float().requires_grad_()", "torch.zeros_like({i}, requires_grad=True)",
    "torch.tensor([1 + 2j], requires_grad=True)", "torch.zeros_like({i}).requires_grad_(False)",
]
# (constructor of {k} features / channels, the shapes of its inputs, whether it is called with
# two inputs, what of its result is taken)
CHAIN_MODULES = [
    ("torch.nn.Linear({k}, 2)", [("{k}",), ("0", "{k}"), ("2", "{k}"), ("2", "0", "{k}")]),
    ("torch.nn.Linear({k}, 0)", [("2", "{k}")]),
    ("torch.nn.Bilinear({k}, 2, 3)", [("{k}",), ("0", "{k}"), ("2", "{k}")]),
    ("torch.nn.Conv1d({k}, 2, 2, padding=1)", [("{k}", "3"), ("0", "{k}", "3"), ("1", "{k}", "1")]),
    ("torch.nn.Conv2d({k}, 2, (1, 2), stride=2)", [("{k}", "2", "3"), ("0", "{k}", "2", "3")]),
    ("torch.nn.ConvTranspose1d({k}, 2, 2, stride=2)", [("{k}", "3"), ("0", "{k}", "2")]),
    ("torch.nn.BatchNorm1d({k})", [("0", "{k}"), ("1", "{k}"), ("{k}",), ("3", "{k}"),
                                    ("2", "{k}", "2")]),
    ("torch.nn.BatchNorm2d({k})", [("{k}", "2", "2"), ("0", "{k}", "2", "2"), ("1", "{k}", "1", "2")]),
    ("torch.nn.LayerNorm({k})", [("0", "{k}"), ("{k}",), ("2", "3", "{k}")]),
    ("torch.nn.LayerNorm([2, {k}], elementwise_affine=False)", [("2", "{k}"), ("0", "2", "{k}")]),
    ("torch.nn.GroupNorm(1, {k})", [("0", "{k}", "2"), ("{k}", "2"), ("2", "{k}")]),
    ("torch.nn.InstanceNorm1d({k}, affine=True)", [("{k}", "3"), ("0", "{k}", "3"), ("2", "{k}", "1")]),
    ("torch.nn.RMSNorm({k})", [("0", "{k}"), ("{k}",)]),
    ("torch.nn.PReLU({k})", [("{k}",), ("0", "{k}"), ("2", "{k}", "2")]),
    ("torch.nn.RNN({k}, 2)", [("3", "{k}"), ("0", "{k}"), ("3", "0", "{k}")]),
    ("torch.nn.GRU({k}, 2, batch_first=True)", [("3", "{k}"), ("0", "2", "{k}"), ("2", "1", "{k}")]),
    ("torch.nn.LSTM({k}, 2)", [("2", "{k}"), ("2", "0", "{k}")]),
    ("torch.nn.MultiheadAttention({k}, 1)", [("2", "{k}"), ("2", "0", "{k}")]),
    ("torch.nn.MaxPool1d(2)", [("{k}", "3"), ("0", "{k}", "4")]),
    ("torch.nn.AvgPool1d(2, ceil_mode=True)", [("{k}", "3"), ("0", "{k}", "3")]),
    ("torch.nn.AdaptiveAvgPool1d(1)", [("{k}", "3"), ("0", "{k}", "2")]),
    ("torch.nn.AdaptiveMaxPool2d((1, 2))", [("{k}", "2", "3"), ("0", "{k}", "2", "2")]),
    ("torch.nn.ReflectionPad1d(1)", [("{k}", "3"), ("0", "{k}", "2")]),
    ("torch.nn.ReplicationPad1d((0, 2))", [("{k}", "3"), ("0", "{k}", "2")]),
    ("torch.nn.CircularPad1d(1)", [("{k}", "3"), ("1", "{k}", "2")]),
    ("torch.nn.Flatten()", [("0", "{k}", "2"), ("{k}",)]),
    ("torch.nn.Unflatten(-1, (1, {k}))", [("0", "{k}"), ("{k}",)]),
    ("torch.nn.Softmax(-1)", [("0", "{k}"), ("{k}",)]),
    ("torch.nn.Softmin(0)", [("0", "{k}"), ("{k}",)]),
    ("torch.nn.CosineSimilarity(-1)", [("{k}",), ("0", "{k}")]),
    ("torch.nn.PairwiseDistance()", [("{k}",), ("0", "{k}")]),
    ("torch.nn.Upsample(scale_factor=2)", [("{k}", "2"), ("0", "{k}", "2")]),
    ("torch.nn.PixelShuffle(2)", [("4", "1", "{k}"), ("0", "4", "1", "{k}")]),
    ("torch.nn.Embedding(5, {k})", [("int", "3"), ("int", "0"), ("int",)]),
    ("torch.nn.EmbeddingBag(5, {k})", [("int", "2", "3"), ("int", "0", "2")]),
]
TWO_INPUTS = ("Bilinear", "CosineSimilarity", "PairwiseDistance")
# (the modules without parameters take no dtype)
NO_DTYPE = ("Pool", "Pad", "Flatten", "Softmax", "Softmin", "Cosine", "Pairwise", "Upsample",
            "PixelShuffle")


def _chain_view(g, x, nd, numel):
    """One or two views of expression x (rank nd): (expression, writable) or (None, None)."""
    r = g.r
    writable = True
    for _ in range(1 if r.random() < 0.7 else 2):
        try:
            v = eval(x, g.ns)
        except Exception:  # noqa: BLE001 - torch refuses the view: no step
            return None, None
        nd = v.dim()
        fmt, _, w = r.choice([c for c in CHAIN_VIEWS if nd >= c[1]])
        x = fmt.format(x=x, d=g.dim(nd, 0.02) if nd else 0, n2=max(1, v.numel() // 2 - 1))
        writable = writable and w
    return x, writable


def g_chains(g):
    """One piece of CHAIN_* (drawn only by seeds >= CHAINS_FROM)."""
    r = g.r
    kind = r.choices(["view", "hook", "mode", "int", "module"], [6, 3, 3, 1, 4])[0]
    if kind == "module":
        return _chain_module(g)
    if kind == "int":
        i = g.pick(lambda m: not m.float and not m.cplx) or g.leaf(g.shape(), r.choice(INTS),
                                                                     kind="ints")
        x = g.pick_float()
        if i is None or x is None:
            return
        fmts = [f for f in CHAIN_INT_RG if "{x}" not in f or x]
        g.add(r.choice(fmts).format(i=i, x=x))
        return
    a = g.pick_float(lambda m: not m.cplx)
    if a is None:
        return
    m = g.meta[a]
    if kind != "mode" and m.leaf and m.rg and r.random() < 0.9:
        # writes go to a non-leaf copy (made a step of its own, compared after the body)
        a = g.add(f"{a} * 1")
        if a is None:
            return
        m = g.meta[a]
    if kind == "mode":
        name = g.fresh()
        body = r.choice(CHAIN_MODE_BODY).format(x=a)
        g.add(r.choice(CHAIN_MODES).format(s=f"{name} = {body}"), stmt=True)
        if name in g.ns and r.random() < 0.8:
            g.add(r.choice(CHAIN_MODE_AFTER).format(v=name, x=a))
        return
    x, writable = _chain_view(g, a, m.nd, int(np.prod(m.shape)))
    if x is None:
        return
    if r.random() < 0.4:
        v = g.add(x)
        if v is None:
            return
        x = v
    if kind == "hook":
        h = r.choice(CHAIN_HOOKS)
        # (retain_grad on a variable only: the program reads the retained .grad by name)
        hooked = [c for c in CHAIN_HOOKED if re.fullmatch(r"v\d+", x) or
                  not any(s.startswith("{x}.retain_grad") for s in c)]
        for s in r.choice(hooked):
            g.add(s.format(b=a, x=x, h=h), stmt=True)
        g.add(f"{a} * 1")
        return
    if r.random() < 0.45:
        try:
            nd = eval(x, g.ns).dim()
        except Exception:  # noqa: BLE001
            return
        g.add(r.choice(CHAIN_REDUCE).format(x=x, d=g.dim(nd, 0.02) if nd else 0),
              nograd=r.random() < 0.05)
        return
    if not writable and r.random() < 0.7:
        return
    fmt = r.choice(CHAIN_INPLACE)
    y = None
    if "{y}" in fmt:
        u = r.random()
        y = (repr(r.choice([2.0, -0.5, 3])) if u < 0.3 else
             r.choice(["torch.tensor(0.5, dtype=torch.float64)", "torch.tensor(2.0)"]) if u < 0.5
             else f"{x}.detach().flip(0) if {x}.dim() else {x}.detach()" if u < 0.7 else
             f"torch.ones_like({x}, requires_grad=True) * 0.5")
    g.add(fmt.format(x=x, y=f"({y})" if y else y), nograd=r.random() < 0.1)
    # the base after the write (its values and gradient through the write)
    g.add(f"{a} * 1")


def _chain_module(g):
    r = g.r
    ctor, shapes = r.choice(CHAIN_MODULES)
    k = r.choice([1, 2, 3])
    dtype = r.choice(FLOATS)
    code = ctor.format(k=k)
    if not any(t in ctor for t in NO_DTYPE):
        code = code[:-1] + f", dtype=torch.{dtype})"
    mod = g.add(code)
    if mod is None:
        return
    # the module's parameters are leaves of the program (nn.Parameter literals)
    for name, p in list(g.ns[mod].named_parameters()):
        w = g.leaf(tuple(p.shape), dtype, param=True)
        if w is None:
            return
        g.add(f"{mod}.{name} = {w}", stmt=True)
    if r.random() < 0.2:
        g.add(f"{mod}.eval()", stmt=True)
    shape = tuple(int(s.format(k=k)) for s in r.choice(shapes) if s != "int")
    if "Embedding" in ctor:
        x = g.leaf(shape, kind="int", lo=0, hi=5)
    else:
        x = g.leaf(shape, dtype if r.random() < 0.9 else r.choice(FLOATS))
    if x is None:
        return
    args = x
    if any(t in ctor for t in TWO_INPUTS):
        y = g.leaf(shape[:-1] + ((2,) if "Bilinear" in ctor else shape[-1:]), dtype)
        args = f"{x}, {y}"
    elif "MultiheadAttention" in ctor:
        args = f"{x}, {x}, {x}, need_weights={r.random() < 0.5}"
    out = g.add(f"{mod}({args})" + ("[0]" if any(t in ctor for t in ("RNN", "GRU", "LSTM",
                                                                       "Multihead")) else ""),
                nograd=r.random() < 0.1)
    if out is not None and "BatchNorm" in ctor and r.random() < 0.6:
        g.add(f"{mod}.running_var * 1")
        g.add(f"{mod}.num_batches_tracked * 1")


# (session 47) nn.Module-level programs: a Sequential of two to four layers (Linear, norms, in-place
# activations that write their input) whose parameters are leaves of the program, then what
# scripts do to such a stack between calls: forward / pre / full backward hooks on a layer or the
# whole stack (replacing or keeping the value), train / eval switches, freezing layers, weight
# sharing, parametrizations (weight_norm, orthogonal, a module) and their removal, state_dict
# round trips into a fresh stack, dtype conversions of the stack (the input then mismatched),
# zero_grad, functional_call, calls under no_grad before the call with grad.  Drawn only by
# seeds >= STACKS_FROM, so the programs of lower seeds stay what they were.
STACKS_FROM = 67_400_000
# (constructor; {i}: the width it takes, {o}: the width it gives, which only Linear changes)
STACK_LAYERS = [
    "torch.nn.Linear({i}, {o})", "torch.nn.Linear({i}, {o}, bias=False)",
    "torch.nn.ReLU(inplace=True)", "torch.nn.LeakyReLU(0.1, inplace=True)",
    "torch.nn.Hardtanh(-0.5, 0.5, inplace=True)", "torch.nn.ELU(inplace=True)",
    "torch.nn.SiLU(inplace=True)", "torch.nn.ReLU6(inplace=True)",
    "torch.nn.Hardswish(inplace=True)", "torch.nn.Threshold(0.1, -1.0, inplace=True)",
    "torch.nn.Dropout(0.0, inplace=True)", "torch.nn.CELU(inplace=True)",
    "torch.nn.SELU(inplace=True)", "torch.nn.Mish(inplace=True)",
    "torch.nn.Hardsigmoid(inplace=True)", "torch.nn.Tanh()", "torch.nn.GELU('tanh')",
    "torch.nn.Identity()", "torch.nn.LayerNorm({i})", "torch.nn.BatchNorm1d({i})",
    "torch.nn.RMSNorm({i})", "torch.nn.PReLU()", "torch.nn.Softplus(beta=2)",
]
# (statements on the stack {m}; {j}: a Linear layer's index, {k}: another layer's index)
STACK_ACTIONS = [
    ["{m}[{j}].register_forward_hook(lambda mod, inp, out: out * 2)"],
    ["{m}[{j}].register_forward_hook(lambda mod, inp, out: None)"],
    ["{m}[{k}].register_forward_hook(lambda mod, inp, out: out.clamp(-1, 1))"],
    ["{m}[{j}].register_forward_pre_hook(lambda mod, inp: (inp[0] * 0.5,))"],
    ["{m}[{k}].register_forward_pre_hook(lambda mod, inp: None)"],
    ["{m}[{j}].register_forward_hook(lambda mod, args, kwargs, out: out + 1, with_kwargs=True)"],
    ["{m}.register_forward_hook(lambda mod, inp, out: out.flip(-1))"],
    ["{m}[{j}].register_full_backward_hook(lambda mod, gi, go: None)"],
    ["{m}[{j}].register_full_backward_hook("
     "lambda mod, gi, go: tuple(None if g is None else g * 2 for g in gi))"],
    ["{m}[{k}].register_full_backward_pre_hook(lambda mod, go: (go[0].clamp(-0.5, 0.5),))"],
    ["{m}.register_full_backward_hook(lambda mod, gi, go: None)"],
    ["{m}.eval()"], ["{m}.train()"], ["{m}.train(False)"], ["{m}[{k}].eval()"],
    ["{m}.requires_grad_(False)", "{m}[{j}].requires_grad_(True)"],
    ["{m}[{j}].weight.requires_grad_(False)"], ["{m}[{j}].requires_grad_(False)"],
    ["{m}[{k}].weight = {m}[{j}].weight"],
    ["{m}.zero_grad()"], ["{m}.zero_grad(set_to_none=False)"],
    ["torch.nn.utils.parametrizations.weight_norm({m}[{j}])"],
    ["torch.nn.utils.parametrizations.weight_norm({m}[{j}], dim=None)"],
    ["torch.nn.utils.parametrizations.orthogonal({m}[{j}])"],
    ["torch.nn.utils.parametrize.register_parametrization({m}[{j}], 'weight', torch.nn.Tanh())"],
    ["torch.nn.utils.parametrize.register_parametrization({m}[{j}], 'weight', torch.nn.Tanh())",
     "torch.nn.utils.parametrize.remove_parametrizations({m}[{j}], 'weight')"],
    ["torch.nn.utils.parametrize.register_parametrization({m}[{j}], 'weight', torch.nn.Tanh())",
     "torch.nn.utils.parametrize.remove_parametrizations({m}[{j}], 'weight', "
     "leave_parametrized=False)"],
    ["{m}.double()"], ["{m}.float()"], ["{m}.to(torch.float64)"], ["{m}.half()"],
    ["{m}.load_state_dict({m}.state_dict())"],
    ["{m}.load_state_dict({{k: v * 2 for k, v in {m}.state_dict().items()}})"],
    ["{m}.apply(lambda mod: mod.register_forward_hook(lambda mm, i, o: o * 0.5) "
     "if isinstance(mod, torch.nn.Linear) else None)"],
    ["{m}[{j}].weight.data.mul_(0.5)"], ["{m}.append(torch.nn.Tanh())"],
]
# (expressions on the stack {m}, its input {x}: values the program compares)
STACK_VALUES = [
    "{m}({x})", "{m}({x})", "{m}({x}).sum()", "{m}[{j}]({x}) if {j} == 0 else {m}({x})",
    "torch.func.functional_call({m}, dict({m}.named_parameters()), ({x},))",
    "torch.func.functional_call({m}, {{n: p * 2 for n, p in {m}.named_parameters()}}, ({x},))",
    "len({m}.state_dict())", "sum(p.numel() for p in {m}.parameters())",
    "sum(p.numel() for p in {m}.parameters() if p.requires_grad)",
    "{m}[{j}].weight * 1", "{m}.training", "len(list({m}.named_modules()))",
    "torch.autograd.grad({m}({x}).sum(), [p for p in {m}.parameters() if p.requires_grad], "
    "allow_unused=True)[0]",
]


def g_stacks(g):
    """A Sequential of STACK_LAYERS, its parameters leaves, called between STACK_ACTIONS
    (drawn only by seeds >= STACKS_FROM)."""
    r = g.r
    dtype = r.choice(FLOATS)
    width = r.choice([1, 2, 3])
    layers, linears, x_width = [], [], width
    for _ in range(r.randint(2, 4)):
        ctor = r.choice(STACK_LAYERS[:2] if not layers and r.random() < 0.7 else STACK_LAYERS)
        out = r.choice([1, 2, 3]) if "Linear" in ctor else width
        if "Linear" in ctor:
            linears.append(len(layers))
        layers.append(ctor.format(i=width, o=out))
        width = out
    if not linears:
        layers.insert(0, f"torch.nn.Linear({x_width}, {x_width})")
        linears.append(0)
    code = f"torch.nn.Sequential({', '.join(layers)})"
    m = g.add(code + (f".to(torch.{dtype})" if dtype != "float32" else ""))
    if m is None:
        return
    for name, p in list(g.ns[m].named_parameters()):
        w = g.leaf(tuple(p.shape), dtype, param=True)
        if w is None:
            return
        index, attr = name.split(".")
        g.add(f"{m}[{index}].{attr} = {w}", stmt=True)
    batch = r.choice([(), (0,), (1,), (2,), (3,), (3,)])
    x = g.leaf(batch + (x_width,), dtype if r.random() < 0.9 else r.choice(FLOATS))
    if x is None:
        return
    n = len(layers)
    for _ in range(r.randint(1, 4)):
        u = r.random()
        fill = dict(m=m, x=x, j=r.choice(linears), k=r.randrange(n))
        if u < 0.45:
            for stmt in r.choice(STACK_ACTIONS):
                g.add(stmt.format(**fill), stmt=True)
        elif u < 0.55:
            # a fresh stack of the same layers, loaded from this one's state_dict
            fresh = g.add(code + (f".to(torch.{dtype})" if dtype != "float32" else ""))
            if fresh is not None:
                # (its random initial values made the same in both libraries first: the load
                # may fail, a parametrized stack's keys differing, fuzz 67401631)
                g.add(f"[torch.nn.init.constant_(p, 0.25) for p in {fresh}.parameters()]",
                      stmt=True)
                g.add(f"{fresh}.load_state_dict({m}.state_dict())", stmt=True)
                g.add(f"{fresh}({x})")
            continue
        g.add(r.choice(STACK_VALUES).format(**fill), nograd=r.random() < 0.15)
    g.add(f"{m}({x})")
    if any("BatchNorm" in c for c in layers) and r.random() < 0.5:
        b = next(i for i, c in enumerate(layers) if "BatchNorm" in c)
        g.add(f"{m}[{b}].running_mean * 1")


# (session 38) Writes scripts make through views and indexing, which the tables above draw only
# on whole variables: augmented assignments to basic, advanced and masked indexes, in-place
# methods on diagonal / narrow / select / transposed views, fills from 0-d tensors that require
# grad, writes PyTorch refuses (expanded views), and out= into tensors that require grad (its
# error) or into a detached alias (the write must reach the version counter).  Not drawn: writes
# into overlapping views PyTorch cannot prove overlapping (unfold(...).mul_(2): its result
# follows its loop order, 65500746) and out= views of another shape (PyTorch resizes the view's
# storage, tapegrad refuses: 65500089).  Drawn only by
# seeds >= WRITES_FROM, so the programs of lower seeds stay what they were.
WRITES_FROM = 65_500_000
VIEW_WRITES = [
    ("{a}[0] += {tg}[0]", 1), ("{a}[..., ::2] *= 2", 1), ("{a}[{i0}] *= -2", 1),
    ("{a}[{i0}] -= 1.5", 1), ("{a}[{m}] += 1", 0), ("{a}[{m}] = {tg}[{m}]", 0),
    ("{a}[:, {i1}] = {tg}[:, {i1}]", 2), ("{a}.mT[0] = {tg}.mT[-1].exp()", 2),
    ("{a}.diagonal().mul_(2)", 2), ("{a}.diagonal().copy_({tg}.diagonal().tanh())", 2),
    ("{a}.narrow({d}, 0, 1).copy_({tg}.narrow({d}, -1, 1))", 1),
    ("{a}.select({d}, 0).cumsum_(0)", 2), ("{a}.mT.cumprod_(-1)", 2),
    ("{a}.index_put_(({i0},), {src0}, accumulate=True)", 1),
    ("{a}[1:].index_put_(({i0},), {tg}[0].sum(), accumulate=True)", 1),
    ("{a}.view(-1)[::2].fill_({tg}.sum())", 0), ("{a}.masked_fill_({m}, {tg}.mean())", 0),
    ("{a}.index_fill_({d}, {id}, {tg}.amax())", 1), ("{a}[0].clamp_(min={tg}[0])", 1),
    ("{a}.mT.masked_scatter_({m}.mT, {tg}.mT)", 2),
    ("{a}.unsqueeze(0).expand(2, *{a}.shape).add_(1)", 0),
    ("{a}.mT.scatter_reduce_(-1, {ix}.mT.clamp(max={a}.shape[-2] - 1), {tg}.mT, '{sr}', "
     "include_self={kd})", 2),
    ("torch.cumsum({t}, {d}, out={a})", 1), ("torch.mul({t}, 2, out={a}.detach())", 0),
    ("torch.add({a}.detach(), {t}, out=torch.empty(0, dtype={a}.dtype))", 0),
    ("torch.exp({t}[..., :1], out={a}.detach()[..., :1])", 1),
]


def g_writes(g):
    """One write of VIEW_WRITES (drawn only by seeds >= WRITES_FROM), on a non-leaf mostly (a
    leaf that requires grad now and then, for PyTorch's error)."""
    r = g.r
    a = g.pick_float(lambda m: not (m.leaf and m.rg) or r.random() < 0.1)
    if a is None:
        return
    m = g.meta[a]
    fmt = r.choice([code for code, least in VIEW_WRITES if m.nd >= least])
    fill = wide_fill(g, a, fmt)
    if fill is not None:
        code = fmt.format(**fill)
        assign = re.match(r"v\d+[.\w]*\[[^\]]*\] [-+*]?= ", code)   # (a statement)
        g.add(code, stmt=bool(assign), nograd=r.random() < 0.1)


# (session 42) out= variants, which the tables above draw only inside VIEW_WRITES: elementwise,
# reductions (multi-output ones with a tuple of outs), products, joins and selections, each
# writing into an out tensor drawn as a variable of its own: of the result's shape and dtype,
# empty (resized), of another shape (PyTorch resizes it and warns), of a wider float dtype (the
# result cast), of an integer / bool dtype (PyTorch's cast error), non-contiguous (a permuted
# tensor), requiring grad (autograd's out= error), the op's own input, or a detached alias of an
# earlier variable (the write must reach the version counter).  The inputs are detached or the step
# runs under no_grad most of the time (in grad mode an input that requires grad makes PyTorch
# refuse out=).  ({o}: the out tensor, ({o}, {oi}) for values and indices.)  Drawn only by
# seeds >= OUT_FROM, so the programs of lower seeds stay what they were.
OUT_FROM = 66_900_000
OUT_ELEMENTWISE = [
    ("torch.add({a}, {tg}, alpha=2, out={o})", 0), ("torch.sub({a}, {b}, out={o})", 0),
    ("torch.mul({a}, {b}, out={o})", 0), ("torch.div({a}, {tg}, rounding_mode='floor', out={o})", 0),
    ("torch.div({a}, {b}, out={o})", 0), ("torch.pow({a}, 2, out={o})", 0),
    ("torch.pow({a}.abs(), {tg}, out={o})", 0), ("torch.exp({a}, out={o})", 0),
    ("torch.log({a}, out={o})", 0), ("torch.sqrt({a}.abs(), out={o})", 0),
    ("torch.sin({a}, out={o})", 0), ("torch.tanh({a}, out={o})", 0),
    ("torch.sigmoid({a}, out={o})", 0), ("torch.abs({a}, out={o})", 0),
    ("torch.neg({a}, out={o})", 0), ("torch.clamp({a}, -0.5, 0.5, out={o})", 0),
    ("torch.clamp({a}, min={tg}, out={o})", 0), ("torch.maximum({a}, {tg}, out={o})", 0),
    ("torch.minimum({a}, {b}, out={o})", 0), ("torch.atan2({a}, {tg}, out={o})", 0),
    ("torch.lerp({a}, {tg}, 0.3, out={o})", 0), ("torch.addcmul({a}, {tg}, {t}, value=2, out={o})", 0),
    ("torch.where({m}, {a}, {tg}, out={o})", 0), ("torch.hypot({a}, {tg}, out={o})", 0),
    ("torch.fmod({a}, 1.5, out={o})", 0), ("torch.remainder({a}, {tg}, out={o})", 0),
    ("torch.floor({a}, out={o})", 0), ("torch.round({a}, decimals=1, out={o})", 0),
    ("torch.erf({a}, out={o})", 0), ("torch.reciprocal({a}, out={o})", 0),
    ("torch.square({a}, out={o})", 0), ("torch.rsqrt({a}, out={o})", 0),
    ("torch.special.expit({a}, out={o})", 0), ("torch.nan_to_num({a}, out={o})", 0),
    ("torch.eq({a}, {b}, out={o})", 0), ("torch.gt({a}, {tg}, out={o})", 0),
]
# (an out tensor that is the input or an alias of an earlier variable only for the elementwise
# ops: a reduction, scan or product writing into its own input gives what PyTorch's loop order
# gives - zeros for mm, inf for amin - 66900070, 66900111, 66900116)
OUT_OTHER = [
    ("torch.sum({a}, {d}, {kd}, out={o})", 1), ("torch.sum({a}, {ds}, out={o})", 1),
    ("torch.mean({a}, {d}, keepdim={kd}, out={o})", 1), ("torch.prod({a}, {d}, {kd}, out={o})", 1),
    ("torch.amax({a}, {d}, {kd}, out={o})", 1), ("torch.amin({a}, {ds}, out={o})", 1),
    ("torch.logsumexp({a}, {d}, {kd}, out={o})", 1), ("torch.std({a}, {d}, keepdim={kd}, out={o})", 1),
    ("torch.var({a}, {d}, correction={cor}, out={o})", 1), ("torch.nansum({a}, {d}, out={o})", 1),
    ("torch.linalg.vector_norm({a}, {p}, {d}, {kd}, out={o})", 1),
    ("torch.cumsum({a}, {d}, out={o})", 1), ("torch.cumprod({a}, {d}, out={o})", 1),
    ("torch.logcumsumexp({a}, {d}, out={o})", 1), ("torch.argmax({a}, {d}, {kd}, out={o})", 1),
    ("torch.all({a} > 0, {d}, out={o})", 1), ("torch.any({a} > 0, {d}, out={o})", 1),
    ("torch.max({a}, {d}, {kd}, out=({o}, {oi}))", 1), ("torch.min({a}, {d}, out=({o}, {oi}))", 1),
    ("torch.sort({a}, {d}, out=({o}, {oi}))", 1), ("torch.topk({a}, 1, {d}, out=({o}, {oi}))", 1),
    ("torch.cummax({a}, {d}, out=({o}, {oi}))", 1), ("torch.median({a}, {d}, out=({o}, {oi}))", 1),
    ("torch.kthvalue({a}, 1, {d}, out=({o}, {oi}))", 1),
    ("torch.matmul({a}, {tg}.mT, out={o})", 2), ("torch.mm({a}, {tg}.mT, out={o})", 2),
    ("torch.mv({a}, {w}, out={o})", 2), ("torch.dot({a}, {tg}, out={o})", 1),
    ("torch.outer({a}, {tg}, out={o})", 1), ("torch.addmm({w}, {a}, {tg}.mT, beta=0.5, out={o})", 2),
    ("torch.bmm({a}, {tg}.mT, out={o})", 3), ("torch.cat([{a}, {tg}], {d}, out={o})", 1),
    ("torch.stack([{a}, {tg}], {d}, out={o})", 0), ("torch.index_select({a}, {d}, {id}, out={o})", 1),
    ("torch.gather({a}, {d}, {ix}, out={o})", 1), ("torch.masked_select({a}, {m}, out={o})", 0),
    ("torch.take({a}, {iflat}, out={o})", 0), ("torch.tril({a}, out={o})", 2),
    ("torch.triu({a}, -1, out={o})", 2), ("torch.diag({a}, out={o})", 1),
]
OUT_VARIANTS = OUT_ELEMENTWISE + OUT_OTHER
# how the out tensor is made ({shape}, {dt}: the result's; {rev}: its shape reversed, {perm}: the
# permutation back), with weights
OUT_KINDS = [("exact", 6), ("empty", 2), ("resized", 1), ("wider", 1), ("integer", 1),
             ("permuted", 2), ("requires_grad", 1), ("input", 1), ("alias", 2)]
WIDER = {"float32": "float64", "float16": "float32", "bfloat16": "float32"}


def _out_tensor(g, kind, res, a):
    """Source of an out tensor for result `res` (a torch tensor) of kind `kind`, or None."""
    shape, dt = tuple(res.shape), str(res.dtype).split(".")[-1]
    full = "torch.full({}, {}, dtype=torch.{}{})"
    fill = {"bool": "True"}.get(dt, "7" if not res.is_floating_point() else "0.5")
    if kind == "empty":
        return f"torch.empty(0, dtype=torch.{dt})"
    if kind == "resized":
        return full.format((2,) + shape[1:] if shape and shape[0] != 2 else (3,), fill, dt, "")
    if kind == "wider":
        return full.format(shape, fill, WIDER.get(dt, "float64"), "")
    if kind == "integer":
        return full.format(shape, 7, "int64" if dt != "int64" else "float32", "")
    if kind == "permuted" and len(shape) >= 2:
        back = tuple(reversed(range(len(shape))))
        return full.format(tuple(reversed(shape)), fill, dt, "") + f".permute{back}"
    if kind == "requires_grad" and res.is_floating_point():
        return full.format(shape, fill, dt, ", requires_grad=True")
    if kind == "alias":
        same = g.vars(lambda m: m.shape == shape and m.dtype == dt and m.float)
        if same:
            return f"{g.r.choice(same)}.detach()"
    return full.format(shape, fill, dt, "")


def g_out(g):
    """One op of OUT_VARIANTS (drawn only by seeds >= OUT_FROM) into an out tensor drawn by
    OUT_KINDS (a step of its own, so it is compared after the write)."""
    r = g.r
    a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    fmt = r.choice([code for code, least in OUT_VARIANTS if m.nd >= least])
    fill = wide_fill(g, a, fmt.replace("{oi}", "").replace("{o}", ""))
    if fill is None:
        return
    kind = r.choices([k for k, _ in OUT_KINDS], [w for _, w in OUT_KINDS])[0]
    if kind in ("input", "alias") and fmt not in dict(OUT_ELEMENTWISE):
        kind = "exact"
    how = r.choices(["detach", "nograd", "grad"], [5, 3, 2])[0]
    if how == "detach":
        fill["a"] = f"{a}.detach()"
    if kind == "input":
        # the op writes into its own (detached, copied) input
        fill["a"] = g.add(f"{a}.detach().clone()")
        if fill["a"] is None:
            return
    # the result without out= (torch's), for the out tensor's shape and dtype
    plain = fmt.replace(", out=({o}, {oi})", "").replace(", out={o}", "")
    try:
        with contextlib.ExitStack() as stack:
            if how == "nograd":
                stack.enter_context(g.torch.no_grad())
            res = eval(plain.format(**fill), g.ns)
    except Exception:  # noqa: BLE001 - torch refuses the op itself: no out= to draw
        return
    values = res[0] if isinstance(res, tuple) else res
    if not is_tensor(values):
        return
    if kind == "input":
        fill["o"] = fill["a"]
    else:
        fill["o"] = g.add(_out_tensor(g, kind, values, a))
    if "{oi}" in fmt:
        ikind = r.choice(["exact", "exact", "empty", "integer"])
        fill["oi"] = g.add(_out_tensor(g, ikind, res[1], a))
    if fill["o"] is None or ("{oi}" in fmt and fill["oi"] is None):
        return
    g.add(fmt.format(**fill), nograd=how == "nograd")


# (session 33) The linalg family beyond WIDE's entries: the factorisations' other outputs, the
# solves on factors, the `_ex` variants and the composites PyTorch computes through LAPACK, whose
# results PyTorch lays out column-major (a later flatten() is a copy, a flat view() raises).
# Sign-ambiguous factors (svd's U / Vh, eigh's vectors) enter through abs().  Drawn only by
# seeds >= LINALG_FROM, so lower seeds' programs stay what they were.  ({s}: a square (batch of)
# matrix of {a}'s dtype, its side {a}'s last dim; {a}.mT: a right-hand side of {s}.)
LINALG_FROM = 65_100_000
SPD = "{s} @ {s}.mT + torch.eye({n}, dtype={s}.dtype)"
TRI = "{s}.tril() + 3 * torch.eye({n}, dtype={s}.dtype)"
WIDE_LINALG = [
    ("torch.linalg.inv_ex({s})[0]", 0), ("torch.linalg.solve({s}, {a}.mT)", 2),
    ("torch.linalg.solve({s}, {a}, left=False)", 2), ("torch.linalg.solve_ex({s}, {a}.mT)[0]", 2),
    ("torch.linalg.solve({s}, {w})", 0),
    (f"torch.linalg.cholesky({SPD}, upper=True)", 0), (f"torch.linalg.cholesky_ex({SPD})[0]", 0),
    (f"torch.cholesky_solve({{a}}.mT, torch.linalg.cholesky({SPD}))", 2),
    (f"torch.cholesky_inverse(torch.linalg.cholesky({SPD}))", 0),
    ("torch.linalg.lu_solve(*torch.linalg.lu_factor({s}), {a}.mT)", 2),
    ("torch.linalg.lu_factor_ex({s})[0]", 0), ("torch.linalg.lu({a})[{k01} + 1]", 2),
    ("torch.lu_unpack(*torch.linalg.lu_factor({s}))[{k01} + 1]", 0),
    (f"torch.linalg.solve_triangular({TRI}, {{a}}, upper=False, left=False)", 2),
    (f"torch.linalg.solve_triangular({TRI}, {{a}}.mT, upper=False, unitriangular=True)", 2),
    ("torch.linalg.qr({a})[{k01}]", 2), ("torch.linalg.qr({a}, mode='complete')[1]", 2),
    ("torch.linalg.svd({a})[0].abs()", 2), ("torch.linalg.svd({a}, full_matrices=False)[2].abs()", 2),
    ("torch.linalg.eigh({s} + {s}.mT)[1].abs()", 0), ("torch.linalg.lstsq({s}, {a}.mT).solution", 2),
    ("torch.linalg.lstsq({a}, {tg}).solution", 2),
    ("torch.linalg.householder_product(*torch.geqrf({a}))", 2),
    ("torch.ormqr(*torch.geqrf({s}), {a}.mT)", 2), ("torch.geqrf({a})[0]", 2),
    ("torch.complex({s}, {s}.mT)", 0), ("torch.linalg.tensorinv({s}, ind=1)", 0),
]


def g_linalg(g):
    """One op of WIDE_LINALG (drawn only by seeds >= LINALG_FROM)."""
    r = g.r
    a = g.pick_float()
    if a is None:
        return
    m = g.meta[a]
    choices = [code for code, least in WIDE_LINALG if m.nd >= least]
    if not choices:
        return
    fmt = r.choice(choices)
    fill = wide_fill(g, a, fmt)
    if fill is not None:
        g.add(fmt.format(**fill), nograd=r.random() < 0.08)


# (session 34) The complex and integer paths of the op library.  Drawn only by seeds >=
# COMPLEX_FROM, so lower seeds' programs stay what they were.
#   complex ({c}: a complex variable; {c2}: a complex leaf of {c}'s shape and dtype that requires
#   grad; {cb}: a complex leaf of a shape broadcasting with {c}'s, of either complex dtype; {f},
#   {f2}: float leaves of {c}'s shape that require grad, in {c}'s real dtype; {fo}: the same in
#   the other float dtype; {d}: a dim; {n}: the last dim's size):
COMPLEX_FROM = 65_200_000
RDT = "{c}.real.dtype"
WIDE_CPLX = [
    # arithmetic with real and complex scalars and tensors, and promotion real x complex
    ("{c} + {f}", 0), ("{f} * {c}", 0), ("{c} / {c2}", 0), ("{f} / {c}", 0), ("{c} - {cb}", 0),
    ("{cb} * {c}", 0), ("{c} * (1.5-2j)", 0), ("(0.5+1j) / {c}", 0), ("{c} - 2.5", 0),
    ("3 * {c}", 0), ("{c} + torch.tensor(1j)", 0), ("{c} * torch.tensor(2.0, dtype=torch.float64)", 0),
    ("{c} * {fo}", 0), ("{fo} + 1j", 0), ("{f} * torch.tensor([1j])", 0), ("{c} ** 2", 0),
    ("{c} ** (0.5+0.5j)", 0), ("{c} ** {c2}", 0), ("2 ** {c}", 0), ("torch.add({c}, {f}, alpha=-2)", 0),
    ("torch.sub({c}, {c2}, alpha=1j)", 0), ("torch.addcmul({c}, {c2}, {f}, value=0.5)", 0),
    ("torch.lerp({c}, {c2}, 0.25)", 0), ("torch.where({f} > 0, {c}, {f})", 0),
    ("torch.where({f} > 0, {c}, 1j)", 0), ("torch.cat([{c}, {f}])", 0),
    ("torch.stack([{c}, {c}.to(torch.complex128)])", 0), ("{c}.to(torch.complex64) + {fo}", 0),
    ("{c} == {c2}", 0), ("{c} != 0", 0), ("torch.isclose({c}, {c2})", 0),
    ("{c}.reciprocal() * {f}", 0),
    # parts and constructors
    ("torch.abs({c})", 0), ("{c}.angle()", 0), ("{c}.real * {c}.imag", 0), ("{c}.conj() * {c2}", 0),
    ("{c}.conj_physical() + {c}", 0), ("torch.view_as_real({c})", 0),
    ("torch.view_as_real({c}.conj())", 0),
    ("torch.view_as_complex(torch.view_as_real({c}) * 2)", 0),
    ("torch.view_as_complex(torch.stack([{f}, {f2}], -1))", 0), ("torch.polar({f}.abs(), {f2})", 0),
    ("torch.polar({f}, {f2})", 0), ("torch.complex({f}, {f2})", 0), ("torch.complex({f}, {fo})", 0),
    ("{c}.conj().imag", 0), ("{c}.sgn() * {c}.abs()", 0), ("{c}.abs().pow(2) - ({c} * {c}.conj()).real", 0),
    # functions on complex
    ("{c}.exp()", 0), ("{c}.log()", 0), ("{c}.sqrt()", 0), ("{c}.sin()", 0), ("{c}.tanh()", 0),
    ("{c}.sigmoid()", 0), ("torch.cos({c})", 0), ("torch.sinh({c})", 0), ("torch.cosh({c})", 0),
    ("torch.tan({c})", 0), ("torch.log10({c})", 0), ("torch.log2({c})", 0), ("torch.asin({c})", 0),
    ("torch.atan({c})", 0), ("torch.asinh({c})", 0), ("torch.acos({c})", 0), ("{c}.rsqrt()", 0),
    ("{c}.square()", 0), ("torch.exp2({c})", 0), ("torch.expm1({c})", 0), ("torch.log1p({c})", 0),
    # products
    ("{c} @ {c}.mH", 2), ("{c}.mT @ {c2}", 2), ("torch.mm({c}.reshape({c}.shape[0], -1), "
                                                "{c2}.reshape({c}.shape[0], -1).mT)", 1),
    ("torch.bmm({c}, {c2}.mH)", 3), ("torch.einsum('...ij,...kj->...ik', {c}, {c2})", 2),
    ("torch.einsum('...i,...i->...', {c}, {c2}.conj())", 1), ("torch.einsum('ij->ji', {c})", 2),
    ("torch.vdot({c}.reshape(-1), {c2}.reshape(-1))", 0), ("torch.dot({c}.reshape(-1), {c2}.reshape(-1))", 0),
    ("torch.matmul({c}, {c2}.transpose(-1, -2))", 2), ("{c} @ {f}.mT", 2),
    ("torch.outer({c}.reshape(-1), {c2}.reshape(-1))", 0), ("torch.kron({c}, {c2})", 0),
    ("torch.linalg.vecdot({c}, {c2})", 1), ("{c} @ {c2}.reshape(-1, 1)[:{n}]", 1),
    # reductions
    ("{c}.sum()", 0), ("{c}.sum({d})", 1), ("{c}.mean({d}, keepdim=True)", 1), ("{c}.prod()", 0),
    ("{c}.prod({d})", 1), ("{c}.cumsum({d})", 1), ("{c}.cumprod({d})", 1),
    ("torch.linalg.norm({c})", 0), ("torch.linalg.norm({c}, dim={d})", 1),
    ("torch.linalg.vector_norm({c}, {p})", 0), ("torch.linalg.vector_norm({c}, 2, dim={d}, keepdim=True)", 1),
    ("torch.linalg.matrix_norm({c})", 2), ("{c}.norm(p=1)", 0), ("{c}.sum(dtype=torch.complex128)", 0),
    ("{c}.var({d})", 1), ("torch.trace({c})", 2), ("{c}.diagonal(0, -2, -1).sum(-1)", 2),
    ("torch.logcumsumexp({c}, {d})", 1),
    # fft
    ("torch.fft.fft({c})", 1), ("torch.fft.fft({c}, n=4, dim={d})", 1),
    ("torch.fft.ifft({c}, norm='ortho')", 1), ("torch.fft.fft({f})", 1), ("torch.fft.rfft({f})", 1),
    ("torch.fft.rfft({f}, n=5, norm='forward')", 1), ("torch.fft.irfft({c})", 1),
    ("torch.fft.irfft({c}, n=4, dim={d})", 1), ("torch.fft.fftn({c})", 1),
    ("torch.fft.fftn({f}, dim=(0, -1))", 2), ("torch.fft.ifftn({c}, s=(2, 3), dim=(0, -1))", 2),
    ("torch.fft.fft2({c})", 2), ("torch.fft.hfft({c})", 1), ("torch.fft.ihfft({f})", 1),
    ("torch.fft.rfftn({f})", 1), ("torch.fft.irfftn({c})", 1), ("torch.fft.fftshift({c})", 1),
    ("torch.fft.ifft(torch.fft.fft({c}, dim={d}), dim={d})", 1),
    # views and their writes
    ("{c}.reshape(-1)", 0), ("{c}.transpose(0, -1)", 1), ("{c}[..., ::2]", 1), ("{c}.mT", 2),
    ("{c}[0]", 1), ("{c}.unsqueeze(0).expand(2, *{c}.shape)", 0), ("{c}.flip({d})", 1),
    ("{c}.roll(1, {d})", 1), ("{c}.conj().mT", 2), ("{c}.view(-1)[1:]", 0),
    # with integer and bool operands ({iv}: an int leaf, {bv}: a bool leaf, broadcasting)
    ("{c} * {iv}", 0), ("{iv} / {c}", 0), ("{c} ** {iv}", 0), ("{c} ** 3", 0), ("{c} ** -2", 0),
    ("torch.where({bv}, {c}, {iv})", 0), ("{c} + {bv}", 0), ("{c}.pow({iv}.abs() % 4)", 0),
    ("torch.take({c}, {iv}.abs() % max({c}.numel(), 1))", 0),
    ("{c}.reshape(-1)[{iv}.reshape(-1).abs() % max({c}.numel(), 1)]", 0),
    ("{c}.masked_fill({bv}, 2j)", 0), ("{c}.sum({d}, dtype=torch.complex128)", 1),
    ("{c}.index_put(({bv}.expand_as({c}),), torch.tensor(1j))", 0),
]
# in place on complex non-leaves and their views ({t}: the target, a complex variable that
# mostly does not require grad as a leaf)
CPLX_INPLACE = [
    ("{t}.mul_(1j)", 0), ("{t}.add_({c2})", 0), ("{t}[0:1].mul_(1j)", 1), ("{t}.mT.add_({c2}.mT)", 2),
    ("{t}.real.mul_(2)", 0), ("{t}.imag.zero_()", 0), ("{t}.imag.add_({f})", 0),
    ("torch.view_as_real({t})[..., 0].add_(1)", 0), ("torch.view_as_real({t}).mul_(0.5)", 0),
    ("{t}.conj().mul_(2)", 0), ("{t}[..., ::2].copy_({t}[..., ::2] * (0.5-1j))", 1),
    ("{t}.div_({c2})", 0), ("{t}.mul_({f})", 0), ("{t}.sub_(2.5)", 0), ("{t}.exp_()", 0),
    ("{t}.sqrt_()", 0), ("{t}.tanh_()", 0), ("{t}.sigmoid_()", 0), ("{t}.pow_(2)", 0),
    ("{t}.conj_physical_()", 0), ("{t}.copy_({f})", 0), ("{t}.fill_(1-1j)", 0),
    ("{t}.masked_fill_({t}.real > 0, 1j)", 0), ("{t}.index_fill_(-1, torch.tensor([0]), 2j)", 1),
    ("{t}.reshape(-1)[:1].copy_(torch.tensor([3j]))", 0),
]
CPLX_SET = ["{t}[0] = 1j", "{t}[..., 0] = {t}[..., -1] * 2", "{t}[{t}.real > 0] = 0.5",
            "{t}.real[...] = 1.5", "{t}.imag[0] = -2.0", "{t}[...] = {f}"]


def _cplx_fill(g, c, fmt):
    """The placeholders of a WIDE_CPLX / CPLX_INPLACE entry besides {c} / {t}, or None."""
    r, m = g.r, g.meta[c]
    sh, nd, dt = m.shape, m.nd, m.dtype
    rdt = FLOATS[dt == "complex128"]
    fill = {"c": c, "t": c, "d": g.dim(nd) if nd else 0, "n": sh[-1] if nd else 1,
            "p": r.choice([1, 2, 3, 0.5, "float('inf')", "-float('inf')", 0])}
    for name in dict.fromkeys(re.findall(r"\{(\w+)\}", fmt)):
        if name in fill:
            continue
        if name == "c2":
            fill[name] = g.leaf(sh, dt, rg=r.random() < 0.8, kind="complex")
        elif name == "cb":
            fill[name] = g.leaf(_partner_shape(r, sh), r.choice(COMPLEXES), kind="complex")
        elif name in ("f", "f2"):
            fill[name] = g.leaf(sh, rdt, rg=r.random() < 0.8)
        elif name == "fo":
            fill[name] = g.leaf(_partner_shape(r, sh), FLOATS[rdt == "float32"])
        elif name in ("iv", "bv"):
            fill[name] = g.leaf(_partner_shape(r, sh), r.choice(INTS) if name == "iv" else None,
                                kind="ints" if name == "iv" else "bool")
        else:
            raise KeyError(f"_cplx_fill: no placeholder {name!r} (in {fmt!r})")
        if fill[name] is None:
            return None
    return fill


def g_complex2(g):
    """One op of WIDE_CPLX / CPLX_INPLACE / CPLX_SET (drawn only by seeds >= COMPLEX_FROM); a
    complex leaf first when the program has none."""
    r = g.r
    c = g.pick(lambda m: m.cplx and m.dtype in COMPLEXES)
    if c is None or r.random() < 0.15:
        g.leaf(g.shape(), kind="complex")
        return
    u = r.random()
    if u < 0.75:
        m = g.meta[c]
        fmt = r.choice([code for code, least in WIDE_CPLX if m.nd >= least])
    else:
        t = g.pick(lambda m: m.cplx and m.dtype in COMPLEXES and
                   (not (m.leaf and m.rg) or r.random() < 0.1))
        if t is None:
            return
        c, m = t, g.meta[t]
        if u < 0.92:
            fmt = r.choice([code for code, least in CPLX_INPLACE if m.nd >= least])
        else:
            fmt = r.choice(CPLX_SET if m.nd else CPLX_SET[3:])
            fill = _cplx_fill(g, c, fmt)
            if fill is not None:
                g.add(fmt.format(**fill), stmt=True, nograd=r.random() < 0.1)
            return
    fill = _cplx_fill(g, c, fmt)
    if fill is not None:
        g.add(fmt.format(**fill), nograd=r.random() < 0.06)


#   integer / bool / uint8 ({i}: an integer variable; {j}: an integer leaf of a broadcasting
#   shape, of another integer dtype now and then, with zeros now and then; {jp}: one of small
#   non-negative values (shift counts); {b}: a bool leaf of a broadcasting shape; {u}: a uint8
#   leaf; {f}: a float leaf of {i}'s shape that requires grad; {d}: a dim; {k}: a topk count):
INTS = ("int64", "int32", "int16", "int8", "uint8")
WIDE_INT = [
    # division and remainder with negatives (integer division by zero: PyTorch's error)
    ("{i} // {j}", 0), ("{i} % {j}", 0), ("torch.floor_divide({i}, {j})", 0),
    ("torch.div({i}, {j}, rounding_mode='floor')", 0), ("torch.div({i}, {j}, rounding_mode='trunc')", 0),
    ("{i} / {j}", 0), ("torch.remainder({i}, -3)", 0), ("torch.fmod({i}, {j})", 0), ("{i} // -2", 0),
    ("{i} % -3", 0), ("-7 // {i}", 0), ("7 % {i}", 0), ("{i} // 2.5", 0), ("{i} % 1.5", 0),
    ("torch.fmod({i}, -2)", 0), ("torch.div({i}, 2, rounding_mode='trunc')", 0),
    ("torch.remainder(-5, {i})", 0), ("{i}.div(-3, rounding_mode='floor')", 0),
    # bitwise ops and shifts
    ("{i} & {j}", 0), ("{i} | {j}", 0), ("{i} ^ {j}", 0), ("~{i}", 0), ("{b} & ({i} > 0)", 0),
    ("{b} | {b}", 0), ("~{b}", 0), ("{b} ^ True", 0), ("{i} << 2", 0), ("{i} >> 1", 0),
    ("{i} << {jp}", 0), ("{i} >> {jp}", 0), ("torch.bitwise_left_shift({i}, {jp})", 0),
    ("torch.bitwise_right_shift({i}, 3)", 0), ("{u} << 5", 0), ("{u} >> {jp}", 0), ("{u} ^ 255", 0),
    ("{i}.bitwise_not()", 0), ("torch.bitwise_and({i}, 6)", 0), ("{i} & {b}", 0), ("{i} | 1.5", 0),
    # promotion with Python and tensor scalars, other int dtypes, bool and floats
    ("{i} * 1.5", 0), ("{i} + 2.5", 0), ("{i} + True", 0), ("{b} + 1", 0), ("{b} * 2.5", 0),
    ("{u} + {i}", 0), ("{u} + 300", 0), ("{u} - 1", 0), ("-{u}", 0), ("-{b}", 0), ("{i} + {j}", 0),
    ("{i} * {f}", 0), ("{f} / ({i} + 10)", 0), ("{f} ** {i}", 0), ("{i} ** 2", 0), ("{i} ** -1", 0),
    ("2 ** {i}", 0), ("{i} ** {jp}", 0), ("{i} / 2", 0), ("{i} + torch.tensor(1.5)", 0),
    ("{i} + torch.tensor(3, dtype=torch.int8)", 0), ("{i} * torch.tensor([2], dtype=torch.int8)", 0),
    ("{i} + 1j", 0), ("{i}.to(torch.int32) + {i}", 0), ("{i}.abs()", 0), ("{i}.sign()", 0),
    ("torch.sgn({i})", 0), ("{i}.neg()", 0), ("{i}.square()", 0), ("{i}.sqrt()", 0), ("{i}.exp()", 0),
    ("torch.sigmoid({i})", 0), ("{i}.float().requires_grad_() * {f}", 0), ("{b}.float() * {f}", 0),
    ("torch.lerp({f}, {i}.to({f}.dtype), 0.5)", 0), ("{i}.double() - {f}", 0),
    ("torch.maximum({i}, {j})", 0), ("torch.minimum({i}, {f})", 0), ("torch.fmax({i}, {f})", 0),
    ("{i}.lcm({j})", 0), ("torch.gcd({i}, {j})", 0),
    # reductions: their dtypes
    ("{i}.sum()", 0), ("{b}.sum()", 0), ("{u}.sum()", 0), ("{i}.sum({d})", 1),
    ("{i}.sum({d}, keepdim=True, dtype=torch.int32)", 1), ("{i}.prod()", 0), ("{b}.prod()", 0),
    ("{u}.prod({d})", 1), ("{i}.cumsum({d})", 1), ("{u}.cumsum(-1)", 1), ("{b}.cumsum(0)", 1),
    ("{i}.cumprod({d})", 1), ("{i}.cumsum({d}, dtype=torch.float64)", 1), ("{i}.mean()", 0),
    ("{i}.mean(dtype=torch.float32)", 0), ("{i}.sum(dtype=torch.float32)", 0), ("{i}.max()", 0),
    ("{i}.min({d}).values", 1), ("{i}.max({d}, keepdim=True).indices", 1), ("{i}.amax({d})", 1),
    ("{b}.any()", 0), ("{b}.all({d})", 1), ("{i}.count_nonzero()", 0), ("torch.cummax({i}, {d})[0]", 1),
    ("{i}.argmax()", 0), ("{i}.argmax({d})", 1), ("{i}.argmin({d}, keepdim=True)", 1),
    ("torch.topk({i}, {k}, {d}).values", 1), ("torch.topk({i}, {k}, {d}, largest=False).values", 1),
    ("{i}.sort({d}).values", 1), ("{i}.sort(dim={d}, stable=True).indices", 1),
    ("{i}.sort(dim={d}, descending=True, stable=True).indices", 1),
    ("{i}.argsort(dim={d}, stable=True)", 1),
    ("{u}.sort(-1).values", 1), ("{i}.unique()", 0), ("torch.bincount({u}.reshape(-1))", 0),
    ("{i}.median()", 0), ("torch.msort({i})", 1), ("{i}.var()", 0),
    # clamp with int and float bounds
    ("{i}.clamp(-1.5, 2.5)", 0), ("{i}.clamp(min=0)", 0), ("{i}.clamp(max=-1)", 0),
    ("{i}.clamp({j})", 0), ("torch.clamp({i}, max={f})", 0), ("{u}.clamp(3, 200)", 0),
    ("{i}.clamp(min=0.5)", 0), ("torch.clamp({i}, -2, torch.tensor(1.5))", 0),
    # comparisons
    ("{i} > {j}", 0), ("{i} == 2", 0), ("{i} < 1.5", 0), ("{b} == {i}", 0), ("{u} > -1", 0),
    ("torch.eq({i}, {f})", 0), ("{i}.ne({f})", 0), ("{i} >= {u}", 0), ("{i}.isclose({j})", 0),
    ("torch.equal({i}, {i}.clone())", 0),
    # where with mixed dtypes
    ("torch.where({b}, {i}, {f})", 0), ("torch.where({b}, {i}, 2.5)", 0), ("torch.where({b}, {u}, {i})", 0),
    ("torch.where({i} > 0, {i}, -1)", 0), ("torch.where({b}, 1, {i})", 0),
    ("torch.where({b}, {i}, {f}.to(torch.complex64))", 0), ("torch.where({i} > 0)[0]", 0),
    ("{i}.masked_fill({b}, 2.5)", 0), ("{f}.masked_fill({b}, 3)", 0), ("{f}[{i} > 0]", 0),
    # shape ops and in-place on ints
    ("{i}.reshape(-1).flip(0)", 0), ("torch.cat([{i}, {u}.to({i}.dtype)], -1)", 1),
    ("torch.cat([{i}, {f}])", 0), ("{i}.mT.contiguous()", 2), ("{i} @ {i}.mT", 2),
    ("{i}.float() @ {f}.mT", 2),
    # integers as indices of float values that require grad, and the grad refusal
    ("{i}.requires_grad_()", 0), ("torch.take_along_dim({f}, {i}.argsort(dim=-1, stable=True), -1)", 1),
    ("{f}.index_select(0, {i}.reshape(-1).abs() % max({f}.shape[0], 1))", 1),
    ("{f}.gather(-1, {i}.argsort(dim=-1, stable=True))", 1),
    ("{f}.scatter_add(-1, {i}.argsort(dim=-1, stable=True), {f})", 1),
    ("torch.bucketize({f}, {f}.reshape(-1).sort().values)", 0), ("{i}.to(torch.float16) * 0.5", 0),
    ("torch.bitwise_xor({b}, {b})", 0), ("{i}.view({i}.dtype)[..., :1]", 1),
    ("{f}[{i}.reshape(-1).abs() % max({f}.shape[0], 1)] if {f}.dim() else {f}", 0),
    ("{i}.bincount() if {i}.dim() == 1 else {i}.histc(4)", 0),
]
INT_INPLACE = [
    "{t}.add_(2)", "{t}.mul_({j})", "{t}.floor_divide_({j})", "{t}.remainder_(3)", "{t}.add_(1.5)",
    "{t}.div_(2)", "{t}.div_(2, rounding_mode='floor')", "{t}.bitwise_and_(5)", "{t}.bitwise_left_shift_(1)",
    "{t}.clamp_(0, 3)", "{t}.clamp_(0.5)", "{t}.neg_()", "{t}.abs_()", "{t}[0] = -3", "{t}[...] = 2.7",
    "{t}.copy_({f})", "{t}.fill_(-1.5)", "{t}.masked_fill_({b}, 7)", "{t}.sub_(True)",
]


def _int_fill(g, i, fmt):
    """The placeholders of a WIDE_INT / INT_INPLACE entry besides {i} / {t}, or None."""
    r, m = g.r, g.meta[i]
    sh, nd = m.shape, m.nd
    fill = {"i": i, "t": i, "d": g.dim(nd) if nd else 0,
            "k": min(r.randint(0, 3), sh[0] if nd else 1) if r.random() < 0.9 else 9}
    if nd and "{k}" in fmt:
        fill["k"] = min(r.randint(0, 3), sh[fill["d"]] if -nd <= fill["d"] < nd else 0) \
            if r.random() < 0.9 else 9
    for name in dict.fromkeys(re.findall(r"\{(\w+)\}", fmt)):
        if name in fill:
            continue
        shape = _partner_shape(r, sh) if r.random() < 0.7 else sh
        if name == "j":
            dt = m.dtype if r.random() < 0.7 else r.choice(INTS)
            fill[name] = g.leaf(shape, dt, kind="ints", style="nonzero" if r.random() < 0.85
                                else None)
        elif name == "jp":
            fill[name] = g.leaf(shape, r.choice(("int64", "int32", "uint8")), kind="ints",
                                style="shift")
        elif name == "u":
            fill[name] = g.leaf(shape, "uint8", kind="ints")
        elif name == "b":
            fill[name] = g.leaf(shape, kind="bool")
        elif name == "f":
            fill[name] = g.leaf(sh, r.choice(FLOATS), rg=r.random() < 0.8)
        else:
            raise KeyError(f"_int_fill: no placeholder {name!r} (in {fmt!r})")
        if fill[name] is None:
            return None
    return fill


def g_int(g):
    """One op of WIDE_INT / INT_INPLACE (drawn only by seeds >= COMPLEX_FROM); an integer, bool
    or uint8 leaf first when the program has none."""
    r = g.r
    i = g.pick(lambda m: m.dtype in INTS)
    if i is None or r.random() < 0.15:
        if r.random() < 0.2:
            g.leaf(g.shape(), kind="bool")
        else:
            g.leaf(g.shape(), r.choice(INTS), kind="ints")
        return
    m = g.meta[i]
    if r.random() < 0.15:
        fmt = r.choice(INT_INPLACE if m.nd else [f for f in INT_INPLACE if "[0]" not in f])
        fill = _int_fill(g, i, fmt)
        if fill is not None:
            code = fmt.format(**fill)
            g.add(code, stmt="] =" in code, nograd=r.random() < 0.1)
        return
    fmt = r.choice([code for code, least in WIDE_INT if m.nd >= least])
    fill = _int_fill(g, i, fmt)
    if fill is not None:
        g.add(fmt.format(**fill), nograd=r.random() < 0.06)


def _partner_shape(r, shape):
    """A shape that broadcasts with `shape` (a suffix of it, some dims 1)."""
    sh = [1 if r.random() < 0.3 else d for d in shape[r.randint(0, len(shape)):]]
    return tuple(sh)


def _index_leaf(g, k, size, unique=False):
    """An int64 leaf of k indices into a dim of `size` (negative ones too unless `unique`)."""
    if unique:
        arr = np.random.default_rng(g.r.randrange(2 ** 32)).permutation(max(size, 1))[:k]
        return g.add(f"torch.tensor({literal(arr.astype('int64'))})")
    return g.leaf((k,), kind="int", lo=-size, hi=max(size, 1))


def wide_fill(g, a, fmt):
    """The values of fmt's placeholders besides {a} (leaves made only for those it names), or
    None when a leaf could not be made."""
    r, m = g.r, g.meta[a]
    sh, nd, dt = m.shape, m.nd, m.dtype
    # (in the order fmt names them: a set's order follows the process's string hashes, so a
    # seed drew other leaves in another process and --repro missed its finding: 62680472)
    names = list(dict.fromkeys(re.findall(r"\{(\w+)\}", fmt)))
    d = g.dim(nd) if nd else 0
    dd = d % nd if nd else 0
    n = sh[-1] if nd else 1
    fill = {"a": a, "d": d, "n": n, "kd": r.random() < 0.5,
            "p": r.choice([1, 2, 3, 0.5, "float('inf')", "-float('inf')", 0]),
            "red": r.choice(["mean", "sum", "none"]), "pm": r.choice([1, 2]),
            "cor": r.choice([0, 1, 2]), "k01": r.choice([0, 1]),
            "q": r.choice([0.3, 0.0, 1.0, 0.5, 1.5]),
            "interp": r.choice(["linear", "lower", "higher", "nearest", "midpoint"]),
            "sr": r.choice(["sum", "prod", "mean", "amax", "amin"]),
            "ir": r.choice(["prod", "mean", "amax", "amin"])}
    if nd:
        u = r.random()
        dims = r.sample(range(nd), r.randint(1, nd))
        dims = [x - nd if r.random() < 0.3 else x for x in dims]
        if u < 0.05:
            dims = dims + dims[:1]          # a repeated dim: PyTorch's error
        elif u < 0.1:
            dims = []                       # an empty tuple: all dims
        fill["ds"] = f"({', '.join(map(str, dims))}{',' if len(dims) == 1 else ''})"
    else:
        fill["ds"] = r.choice(["()", "(0,)", "(-1,)"])
    k = r.randint(0, 3)
    made = {}

    def leaf(name, *args, **kw):
        made[name] = g.leaf(*args, **kw)
        return made[name]
    for name in [name for name in names if name not in fill]:
        if name == "b":
            fill[name] = broadcast_partner(g, a)
            if "{b}." in fmt and fill[name] and not fill[name].startswith("v"):
                fill[name] = leaf(name, _partner_shape(r, sh), dt)   # (a method call on it)
        elif name == "s":
            batch = sh[:-2] if nd >= 3 and r.random() < 0.5 else ()
            fill[name] = leaf(name, batch + (n, n), dt, style="normal")
        elif name == "w":
            fill[name] = leaf(name, (n,), dt)
        elif name == "w1":
            fill[name] = leaf(name, (sh[1] if nd >= 2 and r.random() < 0.7 else 1,), dt)
        elif name in ("t", "tp"):
            fill[name] = leaf(name, sh, dt, rg=False, style="positive" if name == "tp" else None)
        elif name == "tg":
            fill[name] = leaf(name, sh, dt)
        elif name == "y":
            yi = leaf(name, sh, kind="int", lo=0, hi=2)
            fill[name] = yi and f"({yi} * 2 - 1).to({a}.dtype)"
        elif name == "c":
            fill[name] = leaf(name, sh[:-1] if nd >= 2 else (), kind="int", lo=0, hi=max(n, 1))
        elif name == "mll":
            fill[name] = leaf(name, sh, kind="int", lo=-1, hi=max(n, 1))
        elif name in ("m", "m0", "ml"):
            fill[name] = leaf(name, {"m": sh, "m0": sh[:1], "ml": sh[-1:]}[name], kind="bool")
        elif name in ("i0", "i1", "i2"):
            j = int(name[1])
            fill[name] = _index_leaf(g, k if r.random() < 0.8 else 1, sh[j] if j < nd else 1)
        elif name in ("id", "idu"):
            fill[name] = _index_leaf(g, k, sh[dd] if nd else 1, unique=True)
        elif name == "src":
            fill[name] = leaf(name, sh[:dd] + (k,) + sh[dd + 1:] if nd else (), dt)
        elif name == "src0":
            fill[name] = leaf(name, (k,) + sh[1:], dt)
        elif name == "ix":
            ish = tuple(r.randint(1, s) if s else 0 for s in sh)
            fill[name] = leaf(name, ish, kind="int", lo=0, hi=max(sh[dd] if nd else 1, 1))
        elif name in ("iflat", "vflat"):
            if "iflat" not in made:
                size = int(np.prod(sh)) if nd else 1
                made["iflat"] = _index_leaf(g, min(k, size), size, unique=r.random() < 0.7)
                made["vflat"] = g.leaf((min(k, size),), dt) if made["iflat"] else None
            fill[name] = made[name]
        elif name in ("ib", "bb", "f"):
            kind = {"ib": "int", "bb": "bool", "f": "float"}[name]
            fill[name] = leaf(name, _partner_shape(r, sh), "float32" if kind == "float" else None,
                              rg=False if kind == "float" else None, kind=kind, lo=-3, hi=4)
        elif name == "e":
            # embedding indices into {a}'s rows (a (k,) or (2, k) int64 leaf)
            ek = r.randint(0, 4)
            fill[name] = leaf(name, r.choice([(ek,), (2, ek)]), kind="int", lo=0,
                              hi=max(sh[0] if nd else 1, 1))
        else:
            raise KeyError(f"wide_fill: no placeholder {name!r} (in {fmt!r})")
        if fill[name] is None:
            return None
    return fill


@gen(4)
def g_inplace(g):
    r = g.r
    # mostly non-leaves (and views of them); leaves that require grad now and then, for the error
    a = g.pick_float(lambda m: not (m.leaf and m.rg) or r.random() < 0.1)
    if a is None:
        return
    m = g.meta[a]
    sh, nd = m.shape, m.nd
    tgt = a
    if nd and r.random() < 0.4:
        tgt = r.choice([f"{a}[0:1]" if sh[0] else f"{a}[0:0]", f"{a}.mT" if nd >= 2 else f"{a}[:]",
                        f"{a}[..., ::2]", f"{a}.view(-1)" if r.random() < 0.5 else f"{a}[0]" if sh[0]
                        else f"{a}[:]", f"{a}.unsqueeze(0)", f"{a}.select(0, -1)" if sh[0] else f"{a}"])
    b = None
    if r.random() < 0.5:
        b = broadcast_partner(g, a)
        if b is None:
            return
    val = b or repr(r.choice([1.5, -2.0, 0.0, -0.0, 0.5]))
    code = r.choice([f"{tgt}.add_({val})", f"{tgt}.mul_({val})", f"{tgt}.sub_({val})",
                     f"{tgt}.div_({val})", f"{tgt}.clamp_(min=-0.5)", f"{tgt}.relu_()",
                     f"{tgt}.exp_()", f"{tgt}.sigmoid_()", f"{tgt}.tanh_()", f"{tgt}.zero_()",
                     f"{tgt}.fill_({r.choice([1.0, -0.0])})", f"{tgt}.copy_({val})"
                     if b else f"{tgt}.neg_()", f"{tgt}.masked_fill_({a} > 0, 0.0)",
                     f"{tgt}.pow_(2)", f"{tgt}.abs_()", f"{tgt}.sqrt_()"])
    if r.random() < 0.25:
        key = r.choice(["0", "...", "0:1", "::2", f"{a} > 0"]) if nd else "..."
        code = f"{a}[{key}] = {val}"
        g.add(code, stmt=True, nograd=r.random() < 0.1)
        return
    g.add(code, nograd=r.random() < 0.15)


@gen(1)
def g_retain(g):
    a = g.pick(lambda m: not m.leaf or g.r.random() < 0.1)
    if a is not None:
        g.add(f"{a}.retain_grad()", stmt=True)


@gen(1)
def g_grad_ops(g):
    r = g.r
    a = g.pick_float()
    if a is None:
        return
    g.add(r.choice([f"{a}.detach()", f"{a}.detach() * 2", f"{a}.requires_grad_(False)"
                    if g.meta[a].leaf else f"{a}.detach()", f"torch.zeros_like({a})",
                    f"torch.ones_like({a}).mul({a})", f"{a}.type_as(torch.ones((), dtype=torch.float64))",
                    f"{a}.new_zeros({a}.shape)", f"{a}.clone().detach_()"]))


# Complex tensors: PyTorch's gradient of a real loss L at z = x + iy is dL/dx + i dL/dy (the
# conjugate Wirtinger convention).  Complex variables reach the shape ops too (g_shape picks any
# variable); the float generators leave them alone.
C_UNARY = ["-{0}", "{0}.exp()", "{0}.log()", "{0}.sqrt()", "{0}.sin()", "{0}.cos()", "{0}.tanh()",
           "{0}.sigmoid()", "{0}.reciprocal()", "{0}.rsqrt()", "{0}.log1p()", "{0}.expm1()",
           "{0}.abs()", "{0}.angle()", "{0}.sgn()", "{0}.conj()", "{0}.conj_physical()",
           "{0}.real", "{0}.imag", "torch.view_as_real({0})", "{0} * {0}", "{0}.pow(2)",
           "{0}.pow(0.5)", "{0} ** 3", "{0}.square()", "torch.abs({0}) ** 2", "{0}.conj() * {0}",
           "{0}.sum()", "{0}.mean()", "{0}.var()", "{0}.std()", "{0}.norm()", "{0}.prod()",
           "torch.real({0})", "torch.imag({0})", "{0}.to(torch.complex128)",
           "{0}.to(torch.complex64)", "{0} == {0}", "{0}.isfinite()", "{0}.clone()",
           # PyTorch refuses these for complex values: the errors are compared
           "{0}.sign()", "torch.relu({0})", "{0}.clamp(-1, 1)", "{0}.max()", "{0} > 0",
           "{0}.floor()", "torch.erf({0})"]
C_SCALARS = ["2.5", "-1.5", "1j", "(0.5-2j)", "0", "-0.0"]


@gen(4)
def g_complex(g):
    r = g.r
    c = g.pick(lambda m: m.cplx)
    if c is None or r.random() < 0.2:
        a = g.pick_float()
        u = r.random()
        if a is None or u < 0.35:
            g.leaf(g.shape(), kind="complex")
            return
        m = g.meta[a]
        if u < 0.55:
            b = g.leaf(m.shape if r.random() < 0.8 else m.shape[1:], m.dtype)
            if b:
                g.add(r.choice([f"torch.complex({a}, {b})", f"torch.polar({a}.abs(), {b})"]))
        elif u < 0.7 and m.nd and m.shape[-1] == 2:
            g.add(f"torch.view_as_complex({a}{r.choice(['', '.contiguous()', '.clone()'])})")
        else:
            g.add(r.choice([f"{a}.to(torch.complex64)", f"{a}.to(torch.complex128)",
                            f"{a} * 1j", f"{a} + (1-0.5j)", f"torch.exp(1j * {a})"]))
        return
    m = g.meta[c]
    u = r.random()
    if u < 0.35:
        pool = g.vars(lambda x: (x.cplx or x.float) and _broadcasts(x.shape, m.shape))
        v = r.random()
        if v < 0.2:
            b = r.choice(C_SCALARS)
        elif v < 0.5 and pool:
            b = r.choice(pool)
        else:
            shape = tuple(1 if r.random() < 0.3 else d for d in m.shape[r.randint(0, m.nd):])
            # (a complex32 operand has no numpy literal: the other operand takes a default dtype)
            b = g.leaf(shape, m.dtype if r.random() < 0.8 and m.dtype != "complex32" else None,
                       kind="complex" if r.random() < 0.7 else "float")
        if b is None:
            return
        x, y = (c, b) if r.random() < 0.7 else (b, c)
        g.add(r.choice([f"{x} + {y}", f"{x} - {y}", f"{x} * {y}", f"{x} / {y}",
                        f"torch.add({c}, {b}, alpha={r.choice([2, -0.5])})",
                        f"torch.mul({x}, {y})", f"{c} ** {b}" if r.random() < 0.3
                        else f"{x} * {y}", f"torch.where({c}.real > 0, {c}, {b})"]),
               nograd=r.random() < 0.05)
    elif u < 0.75:
        g.add(r.choice(C_UNARY).format(c), nograd=r.random() < 0.05)
    elif u < 0.85 and 1 <= m.nd <= 3:
        k, p = m.shape[-1], r.randint(0, 3)
        shape = r.choice([(k, p), (k,)])
        dtype = m.dtype if r.random() < 0.9 else None
        # (a complex32 operand has no numpy literal: the other operand takes a default dtype)
        b = g.leaf(shape, dtype if dtype in COMPLEXES else None, kind="complex")
        if b:
            g.add(r.choice([f"{c} @ {b}", f"torch.matmul({c}, {b})"]))
    elif u < 0.92 and m.nd:
        d = g.dim(m.nd)
        g.add(r.choice([f"{c}.sum({d})", f"{c}.mean({d}, keepdim=True)", f"{c}.cumsum({d})",
                        f"{c}.masked_fill({c}.real > 0, 0)", f"{c}.flip({d})",
                        f"{c}.var({d})", f"{c}.norm(dim={d})"]))
    else:
        # in place, on non-leaves (and a leaf now and then, for the error)
        t = g.pick(lambda x: x.cplx and (not (x.leaf and x.rg) or r.random() < 0.1))
        if t:
            g.add(r.choice([f"{t}.mul_({r.choice(C_SCALARS)})", f"{t}.add_({r.choice(C_SCALARS)})",
                            f"{t}.exp_()", f"{t}.zero_()", f"{t}.conj_physical_()",
                            f"{t}.neg_()", f"{t}.sqrt_()"]),
                  nograd=r.random() < 0.15)


# Fused sin/cos: tapegrad.compile's replay computes a sin and the cos its backward needs (or the
# reverse) in one pass, in groups of elementwise steps of >= 1024 elements; these steps put sin
# and cos of one input side by side, on big leaves now and then.
@gen(2)
def g_sincos(g):
    r = g.r
    a = g.pick_float(lambda m: int(np.prod(m.shape)) >= BIG) if r.random() < 0.6 else None
    if a is None:
        if r.random() < 0.3:
            a = g.leaf(r.choice([(BIG,), (32, 40), (3, 400), (BIG + 7,), (2, 3, 200)]))
        else:
            a = g.pick_float()
    if a is None:
        return
    c = r.choice([f"{a}.sin() * {a}.cos()", f"torch.sin({a}) + torch.cos({a})",
                  f"({a} * 2).sin() - ({a} * 2).cos().exp()", f"{a}.cos().tanh() * {a}.sin()",
                  f"{a}.sin().sin().cos()", f"torch.sigmoid({a}).sin() / ({a}.cos() + 2)"])
    if r.random() < 0.4:
        s = g.add(f"{a}.sin()")
        k = g.add(f"{a}.cos()")
        if s and k:
            g.add(r.choice([f"{s} * {k}", f"{s} - {k} * {s}", f"({s} + 1) / ({k} + 2)"]))
    else:
        g.add(c, nograd=r.random() < 0.05)


# Parametrizations: a module's weight is a Parameter leaf of the program (the same object stays
# the parametrization's `original`, so its .grad is compared); the output, the weight and the
# input's gradient are compared too.
PARAMETRIZATIONS = ["torch.nn.Tanh()", "torch.nn.Softplus()", "torch.nn.Sigmoid()",
                    "torch.nn.Identity()", "torch.nn.Softsign()", "torch.nn.Hardtanh(-0.5, 0.5)"]


@gen(1.5)
def g_param(g):
    r = g.r
    a = g.pick_float(lambda m: 1 <= m.nd <= 3 and m.shape[-1] <= 6)
    if a is None:
        return
    m = g.meta[a]
    k = m.shape[-1]
    kind = r.choice(["register", "register", "chain", "weight_norm", "orthogonal"])
    # (orthogonal: square only; a non-square weight is completed with torch.randn columns)
    p = k if kind == "orthogonal" else r.randint(1, 3)
    w = g.leaf((p, k), m.dtype, param=True)
    if w is None:
        return
    mod = g.add(f"torch.nn.Linear({k}, {p}, bias=False, dtype=torch.{m.dtype})")
    if mod is None:
        return
    g.add(f"{mod}.weight = {w}", stmt=True)
    P = "torch.nn.utils.parametrize"
    if kind in ("register", "chain"):
        for _ in range(1 if kind == "register" else 2):
            g.add(f"{P}.register_parametrization({mod}, 'weight', {r.choice(PARAMETRIZATIONS)})",
                  stmt=True)
    else:
        g.add(f"torch.nn.utils.parametrizations.{kind}({mod})", stmt=True)
    u = r.random()
    if u < 0.5:
        g.add(f"{mod}({a})")
    elif u < 0.7:
        g.add(f"{mod}({a})", ctx=f"{P}.cached()")
    elif u < 0.85:
        g.add(f"{mod}.weight * 1")
    else:
        g.add(f"{P}.remove_parametrizations({mod}, 'weight', leave_parametrized="
              f"{r.random() < 0.7})", stmt=True)
        g.add(f"{mod}({a})")


# Saved-tensor hooks: pack/unpack pairs that give back the saved values (by reference, a copy,
# a list or a numpy round trip) and save_on_cpu; PyTorch's gradients are unchanged by them.
SAVED_HOOKS = [
    "torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)",
    "torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t)",
    "torch.autograd.graph.saved_tensors_hooks(lambda t: (t.dtype, t.shape, t.tolist()), "
    "lambda p: torch.tensor(p[2], dtype=p[0]).reshape(p[1]))",
    "torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(), "
    "lambda a: torch.from_numpy(a))",
    "torch.autograd.graph.save_on_cpu()",
    "torch.autograd.graph.save_on_cpu(pin_memory=False)",
]


def add_saved_hooks(g, seed):
    """Now and then, body steps run under saved-tensor hooks (a stream of its own, so the body is
    the same program as without them)."""
    r = random.Random(f"saved {seed}")
    if r.random() >= 0.15:
        return
    hooks = r.choice(SAVED_HOOKS)
    for s in g.steps:
        if not s.ctx and not s.is_leaf() and r.random() < 0.5:
            s.set_ctx(hooks if r.random() < 0.8 else r.choice(SAVED_HOOKS))


HOOKS = ["lambda g: g * 2", "lambda g: None", "lambda g: g.clamp(-1.0, 1.0)",
         "lambda g: g + 1"]


def add_hooks(g, seed):
    """Now and then, tensor hooks on float variables that require grad (registered after the
    body: a hook sees every gradient reaching its tensor however late it was registered).  Drawn
    from a stream of their own, so a seed's body is the same program as without hooks."""
    r = random.Random(f"hooks {seed}")
    if r.random() >= 0.2:
        return
    cands = g.vars(lambda m: m.float and m.rg)
    for a in r.sample(cands, min(len(cands), r.randint(1, 2))):
        g.add(f"{a}.register_hook({r.choice(HOOKS)})", stmt=True)


# The contexts a program runs in, drawn (from a stream of their own) only by seeds >= CONTEXT_FROM,
# so the programs of lower seeds stay what they were.  name: (weight, source of the context manager
# around the body or None, whether the tail runs in it too).  "bfloat16" runs no context: its float
# leaves are converted with .to(torch.bfloat16) (Generator._to_bfloat16), and its bfloat16 results
# are compared bit for bit after an elementwise step, within one bfloat16 ulp after any other
# (compare_bfloat16).  Autocast's tail (backward) runs outside the region, as PyTorch advises; a
# function mode's inside it, and the program must give the same bits without the mode
# (function_mode_check).
CONTEXT_FROM = 65_600_000
CONTEXTS = {
    None: (2, None, False),
    "bfloat16": (3, None, False),
    "autocast-bf16": (2, "torch.autocast('cpu', dtype=torch.bfloat16)", False),
    "autocast-fp16": (2, "torch.autocast('cpu', dtype=torch.float16)", False),
    "function-mode": (2, "PassThroughMode()", True),
}
# the generators whose steps are elementwise (a bfloat16 result rounded once from float32)
ELEMENTWISE = (g_binary, g_unary)
PASS_THROUGH_MODE = """class PassThroughMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))"""


def context_source(context):
    """(source of the context manager or None, whether the tail runs in it)."""
    return CONTEXTS[context][1:]


def draw_context(seed):
    if seed < CONTEXT_FROM:
        return None
    names = list(CONTEXTS)
    return random.Random(f"context {seed}").choices(names, [CONTEXTS[n][0] for n in names])[0]


def in_threads(seed):
    """Whether this seed's program also runs in several threads at once (its own stream)."""
    return random.Random(f"threads {seed}").random() < 0.15


def generate(seed):
    context = draw_context(seed)
    manager = context_source(context)[0]
    with contextlib.ExitStack() as stack:
        g = Generator(seed)
        g.bfloat16 = context == "bfloat16"
        if manager:
            stack.enter_context(eval(manager, g.ns))
        return _generate(g, seed, context)


def _generate(g, seed, context):
    r = g.r
    for _ in range(r.randint(1, 3)):
        g.leaf(g.shape())
    n = r.randint(1, MAX_STEPS)
    ops = OPS + ([(g_extra, 8)] if seed >= EXTRA_FROM else []) \
        + ([(g_linalg, 4)] if seed >= LINALG_FROM else []) \
        + ([(g_complex2, 7), (g_int, 7)] if seed >= COMPLEX_FROM else []) \
        + ([(g_writes, 6)] if seed >= WRITES_FROM else []) \
        + ([(g_out, 6)] if seed >= OUT_FROM else []) \
        + ([(g_mixed, 6)] if seed >= MIXED_FROM else []) \
        + ([(g_blind, 8)] if seed >= BLIND_FROM else []) \
        + ([(g_forms, 8)] if seed >= FORMS_FROM else []) \
        + ([(g_chains, 8)] if seed >= CHAINS_FROM else []) \
        + ([(g_stacks, 6)] if seed >= STACKS_FROM else [])
    if seed >= STACKS_FROM and r.random() < 0.4:
        # two in five of these seeds: a program mostly of module stacks
        ops = [(g_stacks, 10), (g_binary, 2), (g_unary, 1), (g_shape, 1), (g_reduce, 1),
               (g_chains, 2)]
        n = r.randint(2, 6)
    elif seed >= CHAINS_FROM and r.random() < 0.4:
        # two in five of these seeds: a program mostly of those pieces
        ops = [(g_chains, 10), (g_binary, 2), (g_unary, 1), (g_shape, 2), (g_reduce, 1),
               (g_inplace, 1)]
        n = r.randint(4, MAX_STEPS)
    elif seed >= FORMS_FROM and r.random() < 0.4:
        # two in five of these seeds: a program mostly of those forms (at a weight of 8 among
        # ~110 they would be a step or so per program)
        ops = [(g_forms, 10), (g_binary, 2), (g_unary, 1), (g_shape, 2), (g_reduce, 1),
               (g_inplace, 1)]
        n = r.randint(4, MAX_STEPS)
    elif seed >= BLIND_FROM and r.random() < 0.3:
        # three in ten of these seeds: a program mostly of those ops (at a weight of 8 among
        # ~100 they would be a step or so per program)
        ops = [(g_blind, 10), (g_binary, 2), (g_unary, 2), (g_shape, 2), (g_reduce, 1),
               (g_inplace, 1)]
        n = r.randint(4, MAX_STEPS)
    elif seed >= OUT_FROM and r.random() < 0.4:
        # two in five of these seeds: a program mostly of out= writes (at a weight of 6 among
        # ~90 they would be one program in ten)
        ops = [(g_out, 10), (g_binary, 2), (g_unary, 2), (g_shape, 2), (g_reduce, 1),
               (g_inplace, 1)]
        n = r.randint(4, MAX_STEPS)
    elif seed >= COMPLEX_FROM and not context and r.random() < 0.5:
        # half of these seeds: a program mostly over complex or integer values (among ~80 of
        # weight, 14 would leave those paths a step or two per program)
        ops = [(g_complex2, 10), (g_complex, 3), (g_int, 10), (g_shape, 2), (g_binary, 1),
               (g_retain, 0.5)]
        n = r.randint(4, MAX_STEPS)
    fns = [f for f, _ in ops]
    weights = [w for _, w in ops]
    for _ in range(n):
        fn = r.choices(fns, weights)[0]
        g.exact = fn in ELEMENTWISE
        fn(g)
    g.exact = False
    add_hooks(g, seed)
    # (a program in a context is not compiled: tapegrad.compile's leaves are its own)
    mode = r.choices(["backward", "grad2", "compile", "plain"],
                     [6, 2, 0 if context else 2, 0.5])[0]
    # the loss terms: float outputs that require grad, decided from torch's run
    loss_vars = [k for k, m in g.meta.items() if (m.float or m.cplx) and m.rg and not m.leaf]
    if not loss_vars:
        loss_vars = [k for k, m in g.meta.items() if (m.float or m.cplx) and m.rg][-1:]
    loss_vars = [v for v in loss_vars if r.random() < 0.7] or loss_vars[-1:]
    retained = [s.code.split(".")[0] for s in g.steps if s.code.endswith(".retain_grad()")]
    add_saved_hooks(g, seed)
    return Program(seed, g.steps, mode, loss_vars, retained, r.randrange(2 ** 32),
                   cplx={k for k, m in g.meta.items() if m.cplx}, context=context)


# -- running and comparing --------------------------------------------------------------------------

def snap(x):
    if is_tensor(x):
        try:
            if getattr(x, "_is_zerotensor", lambda: False)():
                # PyTorch's efficient zero tensor (a zero gradient it never materialises): read
                # as the zeros it stands for
                x = x.detach().clone()
            d = x.detach()
            if type(x).__module__.startswith("torch"):
                # (a PyTorch storage that numpy() has viewed can no longer be resized: a later
                # out= write of another shape into it would raise 'not resizable')
                d = d.clone()
            # (PyTorch's lazy conjugate and negative views refuse numpy() until resolved)
            if d.is_conj():
                d = d.resolve_conj()
            if d.is_neg():
                d = d.resolve_neg()
            # (numpy has no bfloat16: read as float32, which holds every bfloat16 exactly)
            arr = (d.float() if str(d.dtype).endswith("bfloat16") else d).numpy().copy()
            if arr.dtype.kind == "c":
                # compared, adjudicated and moved by FD as (real, imag) pairs: flat index i is
                # part i % 2 of element i // 2
                arr = np.stack([arr.real, arr.imag], -1)
            return ("t", arr, str(x.dtype).split(".")[-1], tuple(x.shape), x.requires_grad)
        except Exception as e:  # noqa: BLE001 - torch refuses to read some invalidated views
            return ("unreadable", surface.err_kind(e), str(e)[:120])
    if isinstance(x, (tuple, list)):
        return ("seq", [snap(e) for e in x])
    if x is None:
        return ("none",)
    if isinstance(x, (bool, int, float, complex, str)):
        return ("py", x)
    # another object (a module): its class name (the two libraries' objects never compare equal)
    return ("py", f"<{type(x).__name__}>")


class Run:
    def __init__(self):
        self.steps = []         # per body step: ("ok", snap) / ("err", kind, msg)
        self.final = {}         # variable -> snap after the body
        self.tail = None        # ("ok",) / ("err", kind, msg)
        self.grads = {}         # "v3.grad" / "G" / "G2" -> snap
        self.live = set()


def execute(L, prog, live=None):
    """Run prog's body and tail with library L.  `live`: the loss variables to use (torch's)."""
    manager, with_tail = context_source(prog.context)
    with contextlib.ExitStack() as region:
        ns = namespace(L)
        if manager:
            region.enter_context(eval(manager, ns))
        return _execute(L, prog, live, ns, None if with_tail else region)


def _execute(L, prog, live, ns, body_region):
    """execute's run in `ns`; `body_region`: the context to leave after the body (None: none, or
    the tail runs in it too)."""
    surface.mark_phase(L)
    res = Run()
    for step in prog.steps:
        out = run_step(L, ns, step)
        if out[0] == "ok":
            res.steps.append(("ok", snap(out[1]) if not step.stmt else ("none",)))
        else:
            res.steps.append(out)
    if body_region is not None:
        body_region.close()
    for k, v in ns.items():
        if re.fullmatch(r"v\d+", k) and is_tensor(v):
            res.final[k] = snap(v)
    if live is None:
        live = {k for k, v in ns.items() if re.fullmatch(r"v\d+", k) and is_tensor(v)
                and (v.is_floating_point() or v.is_complex()) and v.requires_grad}
    res.live = live
    tail = prog.tail(live)
    for v in prog.loss_vars:
        if v in live and v in res.final and res.final[v][0] == "t":
            ns[f"W{v[1:]}"] = L.tensor(prog.weights(v, res.final[v][3], res.final[v][2]))
    leaves = prog.grad_leaves()
    # (WG, not W2: W<k> is the weight of loss term v<k>, and v2 is often one; a list named W2
    # made every such tail raise in both libraries, so their gradients went unchecked)
    ns["WG"] = [L.tensor(prog.weights(f"v{1000 + i}", res.final[v][3], res.final[v][2]))
                if v in res.final and res.final[v][0] == "t" else None
                for i, v in enumerate(leaves)]
    try:
        for line in tail:
            exec(line, ns)
        res.tail = ("ok",)
    except Exception as e:  # noqa: BLE001
        res.tail = ("err", surface.err_kind(e), f"{type(e).__name__}: {str(e)[:200]}")
    if tail:
        for v in leaves + prog.retained:
            if v in ns and is_tensor(ns[v]):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    label = f"{v}.grad" if v in leaves else f"retained {v}.grad"
                    res.grads[label] = snap(ns[v].grad)
        for k in ("G", "G2"):
            if k in ns:
                res.grads[k] = snap(ns[k])
    # A hook's lambda has this namespace as its globals, and the namespace holds the hooked
    # tensor: a cycle through the tape (tensor -> record -> hook) that the garbage collector
    # cannot see.  Clearing the namespace breaks it, so a fuzz run keeps the tape flat.
    ns.clear()
    return res


def tolerances(dtype):
    # (float16, bfloat16: a few units in the last place of their 11- and 8-bit significands)
    half = {"float16": (4e-3, 1e-3), "bfloat16": (3e-2, 1e-2)}
    return half.get(dtype) or ((2e-3, 2e-4) if dtype in SINGLE else (1e-6, 1e-8))


SINGLE = ("float32", "float16", "bfloat16", "complex64")     # dtypes with float32 tolerances


def compare_snaps(label, t, g, out, grad=False, half=False, low=None):
    """`half`: the program rounds through float16 somewhere; `low`: the dtype an autocast
    region computed in (either widens the tolerances of every float value to that dtype's)."""
    if t[0] != g[0]:
        if {t[0], g[0]} == {"none", "t"} and grad and label.startswith("G"):
            # allow_unused: None vs zeros is fine, a nonzero where torch has None is not
            z = t if t[0] == "t" else g
            if not np.any(z[1] != 0):
                return
        out.append(("grad-none" if grad else "structure",
                    f"{label}: torch {_kind(t)} vs tapegrad {_kind(g)}"))
        return
    if t[0] == "seq":
        if len(t[1]) != len(g[1]):
            out.append(("structure", f"{label}: {len(t[1])} vs {len(g[1])} elements"))
            return
        for i, (a, b) in enumerate(zip(t[1], g[1])):
            compare_snaps(f"{label}[{i}]", a, b, out, grad, half, low)
        return
    if t[0] == "py":
        if t[1] != g[1] and not (isinstance(t[1], float) and np.isclose(t[1], g[1], equal_nan=True)):
            out.append(("value", f"{label}: torch {t[1]!r} vs tapegrad {g[1]!r}"))
        return
    if t[0] != "t":
        return
    _, tv, tdt, tsh, trg = t
    _, gv, gdt, gsh, grg = g
    if tdt != gdt:
        out.append(("dtype", f"{label}: torch {tdt} vs tapegrad {gdt}"))
    if tsh != gsh:
        out.append(("shape", f"{label}: torch {tsh} vs tapegrad {gsh}"))
        return
    if trg != grg and not grad:
        out.append(("requires_grad", f"{label}: torch {trg} vs tapegrad {grg}"))
    low = low or ("float16" if half else None)
    rtol, atol = tolerances(low if low and tdt != "bfloat16" else tdt)
    if grad:
        rtol, atol = rtol * 5, atol * 5
    if tdt in COMPLEXES:
        tv, gv = _complex_nans_alike(tv, gv)
    if not surface.close(gv, tv, rtol, atol):
        out.append(("grad" if grad else "value",
                    f"{label} ({tdt}{tsh}): max|diff| {surface._maxdiff(gv, tv)}; torch "
                    f"{surface._short(tv)} vs tapegrad {surface._short(gv)}"))
    elif tv.dtype.kind == "f" and tv.size:
        # NaN where torch has a number (or the reverse) hides inside allclose(equal_nan) only
        # when both are NaN; the sign of zero is a value too
        tz, gz = (tv == 0), (gv == 0)
        if np.any(tz & gz & (np.signbit(tv) != np.signbit(gv))) and not grad:
            out.append(("signed-zero", f"{label}: torch {surface._short(tv)} vs tapegrad "
                                       f"{surface._short(gv)}"))


def _complex_nans_alike(tv, gv):
    """(real, imag) pairs of a complex snapshot with every element that is NaN in both libraries
    (a NaN in either part, as torch.isnan reads it) made NaN in both parts: which part of a
    product with an inf comes out NaN or inf depends on the order of the multiplications (62645448:
    `nan-infj` here, `nan+nanj` in PyTorch, for the same NaN gradient)."""
    both = np.isnan(tv).any(-1) & np.isnan(gv).any(-1)
    if not both.any():
        return tv, gv
    tv, gv = tv.copy(), gv.copy()
    tv[both] = np.nan
    gv[both] = np.nan
    return tv, gv


def _kind(s):
    if s[0] == "unreadable":
        return f"an unreadable tensor ({s[2]})"
    return {"t": "a tensor", "none": "None", "seq": "a sequence", "py": "a number",
            "unreadable": "an unreadable tensor"}[s[0]]


AUTOCAST_DTYPE = {"autocast-bf16": "bfloat16", "autocast-fp16": "float16"}


def compare_runs(prog, t, g):
    out = []
    # a float16 step rounds what follows it to 11 bits: its gradients, in any dtype, too
    half = any("half()" in s.code or "float16" in s.code for s in prog.steps)
    low = AUTOCAST_DTYPE.get(prog.context)
    drifted = set()     # (bfloat16 programs) variables whose bits differ from torch's
    for i, (step, a, b) in enumerate(zip(prog.steps, t.steps, g.steps)):
        # the statement first (the known-difference patterns read it), then what it runs in
        where = " ".join(w for w in ("(no_grad)" if step.nograd else "",
                                     f"(in {step.ctx})" if step.ctx else "") if w)
        statement = step.code if step.stmt else f"{step.out} = {step.code}"
        label = f"step {i} `{statement[:120]}`" + (f" {where[:80]}" if where else "")
        if a[0] == "err" or b[0] == "err":
            if a[0] != b[0]:
                out.append(("missing-error" if a[0] == "err" else "spurious-error",
                            f"{label}: torch {a[2] if a[0] == 'err' else 'ran'}; tapegrad "
                            f"{b[2] if b[0] == 'err' else 'ran'}"))
                return out
            if a[1] != b[1]:
                out.append(("exception-type", f"{label}: torch {a[2]!r} vs tapegrad {b[2]!r}"))
            continue
        n = len(out)
        compare_snaps(label, a[1], b[1], out, low=low)
        if prog.context == "bfloat16":
            compare_bfloat16(label, step, a[1], b[1], drifted, out)
        if len(out) > n:
            return out
    for k in sorted(t.final, key=lambda s: int(s[1:])):
        if k in g.final:
            compare_snaps(f"final {k}", t.final[k], g.final[k], out, low=low)
    if out:
        return out
    if (t.tail[0] == "err") != (g.tail[0] == "err"):
        out.append(("missing-error" if t.tail[0] == "err" else "spurious-error",
                    f"tail: torch {t.tail[-1]}; tapegrad {g.tail[-1]}"))
        return out
    if t.tail[0] == "err":
        if t.tail[1] != g.tail[1]:
            out.append(("exception-type", f"tail: torch {t.tail[2]!r} vs tapegrad {g.tail[2]!r}"))
        return out
    for k, s in t.grads.items():
        if k in g.grads:
            compare_snaps(k, s, g.grads[k], out, grad=True, half=half, low=low)
        else:
            out.append(("grad-none", f"{k}: missing in tapegrad"))
    return out


def compare_bfloat16(label, step, t, g, drifted, out):
    """A step of a bfloat16 program whose inputs have torch's bits: a bfloat16 result must have
    torch's bits after an elementwise step (both compute in float32 and round once) and be within
    one bfloat16 ulp after any other (float32 accumulation in another order).  A step whose result
    differs in any bit puts its variable in `drifted` (an in-place statement: all it reads)."""
    if step.stmt:
        drifted |= step.uses
        return
    if _bit_equal(t, g):
        return
    inputs_exact = not (step.uses & drifted)
    drifted.add(step.out)
    if not inputs_exact or t[0] != "t" or g[0] != "t" or t[2] != "bfloat16" \
            or t[1].shape != g[1].shape:
        return
    ulps = _bfloat16_ulps(t[1], g[1])
    # (0: only a NaN's sign or payload differs, or a zero's sign, which compare_snaps reads)
    if (step.exact and ulps) or ulps > 1:
        out.append(("value", f"{label} (bfloat16{t[3]}): {ulps} bfloat16 ulp apart "
                             f"({'elementwise: bit for bit' if step.exact else 'at most 1'}); "
                             f"torch {surface._short(t[1])} vs tapegrad {surface._short(g[1])}"))


def _bfloat16_ulps(x, y):
    """The largest distance of x from y (float32 arrays of bfloat16 values) in bfloat16 units in
    the last place: 0 where both are NaN (or zeros of either sign), inf where one only is NaN."""
    def line(a):
        bits = np.ascontiguousarray(a, np.float32).view(np.int32).astype(np.int64) >> 16
        return np.where(bits < 0, -(bits & 0x7FFF), bits)     # sign-magnitude to an integer line
    if not x.size:
        return 0
    nx, ny = np.isnan(x), np.isnan(y)
    if np.any(nx != ny):
        return float("inf")
    d = np.abs(line(x) - line(y))
    return int(np.max(np.where(nx, 0, d)))


# -- compiled vs eager ------------------------------------------------------------------------------

def compile_check(prog, t_run, n_calls=3):
    """The body as one function of its leaves, under tapegrad.compile, on fresh leaf values each
    call: outputs and gradients must equal eager tapegrad's bit for bit."""
    import tapegrad as tg
    if any(s[0] == "err" for s in t_run.steps) or t_run.tail[0] == "err":
        return []
    leaves = prog.leaves()
    grad_leaves = set(prog.grad_leaves())
    params = {s.out for s in prog.steps if s.code.startswith("torch.nn.Parameter(")}
    body = [s for s in prog.steps if s.out not in leaves]
    outs = [v for v in prog.loss_vars if v in t_run.live]
    if not outs:
        return []
    src = [f"def program({', '.join(leaves)}):"]
    for s in body:
        src += ["    " + line for line in s.source().split("\n")]
    src.append(f"    return ({', '.join(outs)},)")
    ns = namespace(tg)
    exec("\n".join(src), ns)
    fn = ns["program"]
    compiled = tg.compile(fn)
    rng = np.random.default_rng([prog.seed, 7])
    findings = []
    for call in range(n_calls):
        arrays = []
        for v in leaves:
            s0 = prog.steps[[s.out for s in prog.steps].index(v)]
            arr = eval(_leaf_array(s0), {"np": np, "nan": np.nan, "inf": np.inf})
            if arr.dtype.kind in "fc" and call:
                arr = (arr + rng.standard_normal(arr.shape)).astype(arr.dtype)
            arrays.append(arr)
        results = []
        for f in (fn, compiled):
            args = [tg.nn.Parameter(tg.tensor(a.copy())) if v in params
                    else tg.tensor(a.copy(), requires_grad=(v in grad_leaves))
                    for v, a in zip(leaves, arrays)]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    o = f(*args)
                    loss = None
                    for v, t in zip(outs, o):
                        term = t * tg.tensor(prog.weights(v, tuple(t.shape),
                                                          str(t.dtype).split(".")[-1]))
                        term = (term.real if t.is_complex() else term).sum()
                        loss = term if loss is None else loss + term
                    if loss is not None and loss.requires_grad:
                        loss.backward()
                results.append(("ok", [snap(t) for t in o],
                                [snap(a.grad) for a in args]))
            except Exception as e:  # noqa: BLE001
                results.append(("err", surface.err_kind(e), f"{type(e).__name__}: {str(e)[:200]}"))
        (e_res, c_res) = results
        if e_res[0] != c_res[0] or (e_res[0] == "err" and e_res[1] != c_res[1]):
            findings.append(("compile", f"call {call}: eager {e_res[-1] if e_res[0] == 'err' else 'ran'}"
                                        f", compiled {c_res[-1] if c_res[0] == 'err' else 'ran'}"))
            break
        if e_res[0] == "err":
            continue
        for what, es, cs in (("output", e_res[1], c_res[1]), ("grad", e_res[2], c_res[2])):
            for j, (a, b) in enumerate(zip(es, cs)):
                if not _bit_equal(a, b):
                    findings.append(("compile", f"call {call}: {what} {j} differs "
                                                f"({_how_bits_differ(a, b)}): eager "
                                                f"{_desc(a)} vs compiled {_desc(b)} "
                                                f"({compiled.explain()})"))
        if findings:
            break
    return findings


def _leaf_array(step):
    """Source of a leaf step's values (a literal, or big_literal's generator call)."""
    m = re.search(r"np\.array\(.*?\)\.reshape\([^)]*\)\)|np\.random\.default_rng\(.*?"
                  r"\.astype\(dtype='\w+'\)", step.code)
    return m.group(0)


def _bit_equal(a, b):
    if a[0] != b[0]:
        return False
    if a[0] != "t":
        return True
    return (a[2] == b[2] and a[3] == b[3] and a[4] == b[4]
            and a[1].tobytes() == b[1].tobytes())


def _how_bits_differ(a, b):
    """For the report: the largest difference in units of the last place, and whether the NaN
    masks agree (a NaN payload or a summation order differs, or a value does)."""
    if a[0] != "t" or b[0] != "t" or a[1].shape != b[1].shape or a[1].dtype != b[1].dtype \
            or a[1].dtype.kind != "f":
        return "structure"
    x, y = a[1].astype(np.float64), b[1].astype(np.float64)
    if np.array_equal(x, y, equal_nan=True) and np.array_equal(np.signbit(x[~np.isnan(x)]),
                                                               np.signbit(y[~np.isnan(y)])):
        return "only the bits of NaNs differ"       # (their sign or payload)
    nan_same = bool(np.array_equal(np.isnan(x), np.isnan(y)))
    ok = ~(np.isnan(x) | np.isnan(y))
    with np.errstate(invalid="ignore", over="ignore"):
        ulp = np.spacing(np.abs(a[1][ok])).astype(np.float64)
        d = np.abs(x[ok] - y[ok])
        d = np.where(x[ok] == y[ok], 0.0, d)
        ulps = float(np.max(d / ulp)) if d.size else 0.0
    return f"max {ulps:.3g} ulp, NaN mask {'same' if nan_same else 'differs'}"


def _desc(s):
    if s[0] != "t":
        return _kind(s)
    return f"{s[2]}{s[3]} rg={s[4]} {surface._short(s[1])}"


# -- a seed: generate, run, compare ---------------------------------------------------------------

# Differences triaged as known core-level bugs (each has an xfail repro in
# tests/test_fuzz_regressions.py) or deliberate; `known` filters them so a run shows what is new.
KNOWN = [
    # torch's bug: a one-dimensional FFT over a batch of zero transforms (fft / rfft / irfft /
    # hfft ... of a (0, n) input along the last dim) raises MKL's "Inconsistent configuration
    # parameters"; tapegrad returns the empty result (65201495)
    ("missing-error", r"MKL FFT error"),
    # deliberate (docs/differences.md, complex views): a recorded in-place write into a conj()
    # result, or into .real / .imag / view_as_real / view_as_complex of a value in a graph, is
    # refused here; PyTorch records it on the input as CopySlices (g_complex2's CPLX_INPLACE)
    ("spurious-error", r"in-place operations on a conj\(\) view that autograd records are not "
                       r"supported by tapegrad|in-place operations on a view of a tensor that "
                       r"requires grad are not supported by tapegrad"),
    # torch's bug: logsumexp over dim=() of a tensor of 2+ dims raises its own internal "output
    # with shape [] doesn't match the broadcast shape [1, 1]" (an empty dim list reduces every
    # dim, as sum's and tapegrad's; 60634366)
    ("missing-error", r"logsumexp\(.*\(\)|logsumexp\(.*\[\]"),
    # deliberate: the sign of a zero sum depends on the accumulation order (BLAS, pairwise sums)
    ("signed-zero", r"linear|matmul|mm\(|einsum| @ |layer_norm|addmm|dot|sum|mean|norm|var|std|"
                    r"softmax|cumsum|cumprod|prod|logsumexp"),
    # the same in a module's call (the parametrized nn.Linear of g_param: a matmul)
    ("signed-zero", r"= v\d+\(v\d+\)`"),
    # degenerate: torch's sign of a zero from gelu(-0.0) / softshrink's dead zone depends on its
    # kernel's path (vectorised body vs scalar tail, float32 vs float64: seeds 62606025, 63005662)
    ("signed-zero", r"F\.gelu|softshrink"),
    # degenerate: torch's min / max of +0.0 and -0.0 returns the one its kernel path picks (the
    # vectorised body the other of the scalar tail: minimum(0., full((n,), -0.)) is -0. from
    # n = 8 on, +0. below; seeds 62712624, 62710871 with clamp's tensor bound)
    ("signed-zero", r"minimum|maximum|clamp|clip"),
    # minor: a zero loss term's sign (-(w * 0) vs 0) in cross_entropy / nll_loss
    ("signed-zero", r"cross_entropy|nll_loss"),
    # open (docs/differences.md, session 10): view_as_complex reads numpy's strides, which for an
    # empty tensor are not always PyTorch's (the strides work of another scope)
    ("spurious-error", r"view_as_complex\(.*Tensor must have a last dimension with stride 1"),
    # and the other way: PyTorch's empty matmul result under grad has strides (2, 1, 1), which
    # its clone keeps, so view_as_complex refuses it; tapegrad's are row-major (60668622)
    ("missing-error", r"view_as_complex\(.*Tensor must have a stride divisible by 2"),
    # torch's internal assert: where() promoting a real operand to complex sends a complex
    # gradient to the real input (seed 60607532); tapegrad takes its real part, torch's answer
    # when the operand is cast explicitly first (`.to(torch.complex64)`)
    ("missing-error", r"isFloatingType\(grad\.scalar_type\(\)\) \|\| \(input_is_complex == "
                      r"grad_is_complex\)"),
    # torch's quirk: bmm / baddbmm (and matmul of 3-d operands) with an empty batch, rows,
    # columns or inner dim skip the dtype check and return the second operand's dtype; with any
    # element both refuse float x double (65302208)
    ("spurious-error", r"(@|matmul|bmm).*(expected scalar type \w+ but found \w+|expected m1 "
                       r"and m2 to have the same dtype)"),
    # torch's bug: addmv with an empty (0, m) matrix and a 1-element input returns a [1, m]
    # gradient for the matrix at backward (seed 62600415); tapegrad's is (0, m)
    ("missing-error", r"AddmvBackward0 returned an invalid gradient"),
    # torch has no double backward for cdist (p != 2 and its large-input path; 65001696) nor for
    # pdist (65100022); tapegrad's are composites of differentiable ops
    ("missing-error", r"the derivative for '_(cdist|pdist)_backward' is not implemented"),
    # torch's backend quirk: a grouped float32 conv_transpose whose output size is 0 returns an
    # empty tensor (the mkldnn path skips the size check its other paths make; 62601143)
    ("crash", r"Calculated output size per channel: \((0|0 x \d+|\d+ x 0)\)"),
    # torch's bug: scatter_add / scatter_reduce's backward returns src's gradient in the
    # index's shape when the index is smaller than src (its own shape check then fails; amax /
    # amin fail earlier, in a broadcast): tapegrad's is src-shaped, zero off the index
    # (seeds 63004193, 62605332); scatter's own ScatterBackward0 the same (63006291, 60615653)
    ("missing-error", r"Scatter(Reduce|Add)?Backward0 returned an invalid gradient"),
    # torch has no double backward for multi_margin_loss (seed 62605089) or
    # multilabel_margin_loss (60615535); tapegrad's losses are composites of differentiable ops
    ("missing-error", r"derivative for aten::multi(label)?_margin_loss_backward is not "
                      r"implemented"),
    # torch's internal error: a second derivative through sgn_ of a result whose first
    # gradient is PyTorch's ZeroTensor tries to write into it (seed 60614719); tapegrad's zero
    # gradient is an ordinary tensor
    ("missing-error", r"ZeroTensors are immutable"),
    # torch's internal error: index_fill_ / index_copy on a dim of size 0 fails in setStorage
    # (tapegrad: the out-of-range index's IndexError, as torch raises on a non-empty dim;
    # seeds 63004109, 62605070)
    ("exception-type", r"setStorage: sizes \[.*out of bounds for storage of size"),
    # torch quirk: `x[...] = s` with x an expand of s itself runs (its setitem's copy skips the
    # internal-overlap check it makes in x.copy_(s), which raises); tapegrad refuses as copy_
    # does (seed 119 of tests/test_fuzz_programs.py once the session-20 tables were added)
    ("spurious-error", r"`v(\d+)\[\.\.\.\] = v\d+`: torch ran; tapegrad RuntimeError: unsupported "
                       r"operation: more than one element of the written-to tensor"),
    # deliberate (docs/differences.md): tapegrad has no complex32 (numpy has no complex half);
    # PyTorch's own complex32 kernels are few (NotImplementedError for exp, polar; seeds
    # 60620125, 60622171, 60622970)
    ("*", r"tapegrad has no complex32 \(chalf\) tensors"),
    # torch's bug: its float16 / bfloat16 matrix_exp is wrong (inf, nan or values like -2e4 for
    # exp(I): matrix_exp(eye(2).half())), its float32 / float64 agree with scipy's expm and with
    # tapegrad's Taylor series in any dtype (seed 62712568)
    ("value", r"matrix_exp\(.*\(b?float16\("),
    # degenerate: compiled and eager NaNs with other sign or payload bits (a NaN's sign is no
    # value PyTorch promises either: 60626895, amin's gradient of a NaN row)
    ("compile", r"\(only the bits of NaNs differ\)"),
    # torch's rounding (docs/differences.md, session 15): trigamma at a negative integer is
    # the reflection pi^2 / sin^2(pi x) at sin(pi x) ~ 1e-16, a huge finite value (6.6e32 in
    # float64, 1.3e15 in float32); tapegrad's pole is inf (60628605)
    ("value", r"^step \d+ `v\d+ = .*polygamma_?\(1[,)].*max\|diff\| inf;"),
    # torch's accuracy: its special.airy_ai loses digits on about [-3.2, -2.09] (3e-6 at -2.091
    # in float64 where scipy's airy and tapegrad's agree to 1e-14; 60628979)
    ("value", r"^step \d+ `v\d+ = torch\.special\.airy_ai\(.*max\|diff\| \d(\.\d+)?e-(0[6-9]|[1-9]\d);"),
    # torch's bug: multi_margin_loss / multilabel_margin_loss of an empty batch reduced by 'sum'
    # or 'mean' return uninitialised memory (9e26, 2e-42, 0 from one call to the next);
    # tapegrad's are an empty sum's 0 and an empty mean's NaN (60628753, 60630289)
    ("value", r"^step \d+ `v\d+ = F\.multi(label)?_margin_loss\(.*reduction='(sum|mean)'\)` "
              r"\(float(32|64)\(\)\): .* vs tapegrad (0\.|nan)$"),
    # torch's Welford: var_mean / std_mean's mean of a slice with an infinite element is NaN
    # when an element follows the first infinite one (x - inf), inf when the inf comes last
    # ([inf, 1] -> nan, [1, inf] -> inf; torch.mean gives inf for both); tapegrad's mean is
    # mean()'s (60648329)
    ("value", r"^step \d+ `v\d+ = torch\.(var|std)_mean\(.*\)\[1\]` .*max\|diff\| nan; "
              r"torch .*nan.* vs tapegrad .*inf"),
    # torch's bug: its vectorized float32 gelu gives NaN at +inf (F.gelu(torch.full((2,), inf))
    # is [nan, nan]; one element, float64 and approximate='tanh' give inf); tapegrad's is inf,
    # the limit, everywhere (62707108; bfloat16's the same: 67102038)
    ("value", r"^step \d+ `v\d+ = F\.gelu\(v\d+\)` \((b?float(32|16))\(.*\)\): max\|diff\| 0; "
              r"torch .*nan.* vs tapegrad .*inf"),
    # torch's bug: kron views its operands, which fails for a permuted (non-viewable) operand
    # of 3 or more dims (kron(ones(3, 2, 1).swapdims(0, -1), ones(1, 2, 3)) raises "view size
    # is not compatible"; a 2-d .t() works); the product is defined, tapegrad's (65020721)
    ("missing-error", r"^step \d+ `v\d+ = torch\.kron\(.*`: torch RuntimeError: view size is not "
                      r"compatible"),
    # deliberate (README): fill_/zero_ directly on a view of a tensor that requires grad
    ("spurious-error", "in-place operations on a view of a tensor that requires grad are not "
                       "supported"),
]


def known(cat, msg):
    return any(c in (cat, "*") and re.search(p, msg) for c, p in KNOWN)


# Views whose elements repeat a base element (an unfold window overlapping the next) and the
# ops that keep a view of their input (an in-place op returns its input)
OVERLAPPING_VIEW = re.compile(r"\.unfold\(-?\d+, 2, 1\)|as_strided\(.*\(1, 1\)|"
                              r"as_strided\(.*\(0,\)\)")
VIEW_OF_INPUT = re.compile(r"^(v\d+)(\.(view|reshape|transpose|permute|t|mT|T|select|narrow|"
                           r"squeeze|unsqueeze|expand|flatten|unflatten|movedim|swapaxes|"
                           r"diagonal|unfold|\w+_)\b|\[)")


def through_overlapping_view(prog, var):
    """Whether `var` is (a view of) a view whose elements overlap (following the views back)."""
    defs = {s.out: s.code for s in prog.steps if s.out}
    for _ in range(len(defs)):
        code = defs.get(var)
        if code is None:
            return False
        if OVERLAPPING_VIEW.search(code):
            return True
        m = VIEW_OF_INPUT.match(code)
        if not m:
            return False
        var = m.group(1)
    return False


# logit / ndtri of a sigmoid: where the sigmoid is within a few ulps of 0 or 1, an ulp of it moves
# the quantile far (logit's condition number is 1 / (1 - p)).  The two sigmoids differ by an ulp
# in 40% of float64 values (PyTorch's vectorised exp is Sleef's, 1 ulp; tapegrad's is correctly
# rounded in the cases checked: 60633076, sigmoid(29.9986) off by 1e-16 in PyTorch, 7e-18 here).
SATURATED_SIGMOID = re.compile(r"step (\d+) `v\d+ = torch\.special\.(logit|ndtri)\((v\d+)"
                               r"\.sigmoid\(\)\)`")


# A one-tensor op whose input differs between the libraries within the tolerance, where the op
# amplifies that difference: sin / cos of a value of 1e31 (an ulp of it is 2e15, many periods;
# 60664665: cumprod ** -0.58, then sin, every digit differs in float64 too).  Checked as the
# sigmoid case: tapegrad's op on PyTorch's own input must give PyTorch's result.  A method may
# be in place and take number arguments: mvlgamma_(1) (lgamma) of a float32 400 x 400 LU factor,
# whose elements near lgamma's poles differ in float32 rounding (62709861; both libraries' values
# are as far from float64 finite differences)
AMPLIFIED_UNARY = re.compile(r"step (\d+) `v\d+ = (?:(v\d+)\.([a-z][a-z0-9_]*[a-z0-9]_?)"
                             r"\(((?:-?[\d.]+(?:, )?)*)\)"
                             r"|torch\.([a-z][a-z0-9_]*[a-z0-9])\((v\d+)\))`")


def same_op_on_torch_input(prog, step, input_code, apply):
    """Whether `apply(tapegrad, x)` gives `apply(torch, x)` for x PyTorch's own value of
    `input_code` (as it stood before `step`): the difference then came from the input's last
    bits, not from the op.  (A wrong op still shows: 60634821's ndtri lost every digit of its
    tails.)"""
    import tapegrad
    import torch
    probe = prog.derive(steps=prog.steps[:step] + [Step(input_code, "v_probe")],
                        loss_vars=[], retained=[])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = execute(torch, probe)
        got = run.steps[-1]
        if got[0] != "ok" or got[1][0] != "t":
            return False
        p = got[1][1]
        try:
            expected = apply(torch, torch.tensor(p)).detach().numpy()
            actual = apply(tapegrad, tapegrad.tensor(p)).detach().numpy()
        except Exception:  # noqa: BLE001 - not an op of one tensor: no verdict from this check
            return False
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return False
    rtol, atol = tolerances(str(p.dtype))
    return bool(np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True))


VIEW_IN_PLACE = re.compile(r"^(v\d+)\.(t_|transpose_|swapdims_|swapaxes_|unsqueeze_|squeeze_|"
                           r"as_strided_)\(")
SELF_RETURNING = re.compile(r"^(v\d+)\.\w+_\(")


def _view_changed_in_place(prog, var):
    """Whether the tensor `var` names is changed by an in-place view op (t_, unsqueeze_, ...)
    after its retain_grad(); its names are all those in-place methods returned for it
    (v5 = v2.masked_scatter_(...) names v2's tensor)."""
    group = {var}
    for _ in range(len(prog.steps)):
        grown = set(group)
        for s in prog.steps:
            m = SELF_RETURNING.match(s.code)
            if m and s.out and (m.group(1) in group or s.out in group):
                grown |= {m.group(1), s.out}
        if grown == group:
            break
        group = grown
    retained = False
    for s in prog.steps:
        if s.stmt and s.code.endswith(".retain_grad()") and s.code.split(".")[0] in group:
            retained = True
        m = VIEW_IN_PLACE.match(s.code)
        if retained and m and m.group(1) in group:
            return True
    return False


def _orthogonal_of_singular(prog):
    """Whether the program applies parametrizations.orthogonal to a module whose weight leaf
    is (numerically) rank-deficient or not finite."""
    defs = {s.out: s.code for s in prog.steps if s.out}
    weights = dict(re.findall(r"^(v\d+)\.weight = (v\d+)$", "\n".join(
        s.code for s in prog.steps if s.stmt), re.M))
    for s in prog.steps:
        m = re.search(r"parametrizations\.orthogonal\((v\d+)\)", s.code)
        leaf = defs.get(weights.get(m.group(1)) if m else None, "")
        lit = re.search(r"np\.array\(.*\)\.reshape\(\([\d, ]*\)\)", leaf)
        if not lit:
            continue
        w = eval(lit.group(0), {"np": np, "nan": np.nan, "inf": np.inf})  # noqa: S307 (ours)
        w = w.astype(np.complex128 if w.dtype.kind == "c" else np.float64)
        if not np.all(np.isfinite(w)) or np.linalg.matrix_rank(w) < min(w.shape):
            return True
    return False


def _nan_where_inf(msg):
    """Whether the values a finding prints differ only where PyTorch's are NaN and tapegrad's
    +-inf (`torch [nan 1.] vs tapegrad [inf 1.]`)."""
    m = re.search(r"torch (\[[][\s\d.eE+\-nafij]*?\]) vs tapegrad (\[[][\s\d.eE+\-nafij]*\])", msg)
    if not m:
        return False
    t, g = (re.sub(r"[\[\]]", " ", m.group(k)).split() for k in (1, 2))
    if len(t) != len(g) or "..." in t:
        return False
    pairs = [(a, b) for a, b in zip(t, g) if a != b]
    return bool(pairs) and all(a == "nan" and b in ("inf", "-inf") for a, b in pairs)


def known_for(prog, cat, msg):
    """Differences known from what the program does, not from the message alone."""
    defs = {s.out: s.code for s in prog.steps if s.out}
    resized = {mm.group(1) for s in prog.steps
               for mm in re.finditer(r"out=\((v\d+), (v\d+)\)", s.code)
               if "int64" not in defs.get(mm.group(2), "int64")}
    if cat != "crash" and any(re.search(rf"\b{v}\b", msg) for v in resized):
        # PyTorch's side effect: sort / kthvalue / min / max ... with out=(values, indices) of a
        # non-int64 indices dtype resize the values out to the result's shape, then refuse the
        # indices; tapegrad refuses before writing anything, so the values out keeps its shape
        # (67102052, 67101940, 67102376; and what reads it later: 67203325)
        return True
    if cat in ("value", "signed-zero") and re.search(
            r"\.expand\(.*\)\.(nan)?median\([^)]", msg):
        # torch's bug: median / nanmedian along a dim of an expanded (stride-0) tensor read
        # memory it never wrote (denormals like 6.9e-310, or another element: 67202168,
        # 67202281, 67203583; x.expand(2, 3).contiguous() gives the right values, tapegrad's)
        return True
    partly = {mm.group(1) for s in prog.steps for mm in [re.match(
        r"(v\d+)\[.*\]\.index_put_\(.*accumulate=True", s.code)] if mm}
    if cat == "value" and any(re.search(rf"\b{v}\b", msg) for v in partly):
        # PyTorch's side effect: index_put_(accumulate=True) with an out-of-range index writes
        # the rows before it, then raises IndexError; tapegrad checks first, so the variable
        # (and what is computed from it) differs (67101957)
        return True
    if cat in ("missing-error", "exception-type", "spurious-error") and any(
            re.match(r"torch\.nn\.(PixelShuffle|InstanceNorm\dd|ConvTranspose\dd)\(", s.code)
            for s in prog.steps) and re.search(r"PixelShuffleBackward0 returned an invalid|"
                                               r"select\(\): index 0 out of range|"
                                               r"Input type \(\w+\) and weight type", msg):
        # torch's quirks on an empty batch (g_chains' modules): PixelShuffle's backward returns
        # a gradient of the wrong shape, InstanceNorm raises select()'s IndexError, a
        # ConvTranspose skips its dtype check (67300029, 67300023, 67300039)
        return True
    if cat in ("grad", "grad2", "spurious-error") and any(
            re.search(r"\.logical_(and|or|xor|not)_\(", s.code) for s in prog.steps):
        # torch's bug: a float tensor's in-place logical_and_ / or_ / xor_ / not_ is recorded as
        # MulBackward0 and passes the incoming gradient through (x.logical_not_() of x = a * 1:
        # a.grad is the loss weight), and skips the checks of in-place writes into views of
        # leaves or of multi-output views; tapegrad's gradient is the derivative of a 0 / 1
        # result, zero, and its checks hold (67100216, 67100323, 67100551, 67100080, 67100465)
        return True
    m = re.match(r"step \d+ `v\d+ = (v\d+)\.\w+_\(", msg)
    if cat in ("value", "signed-zero") and m and through_overlapping_view(prog, m.group(1)):
        # PyTorch's undefined behaviour (docs/differences.md, session 21): its elementwise kernel
        # writes through a view whose elements overlap one position after another, so a
        # shared element gets a non-idempotent op once per position (div_(0.5) twice: 4x,
        # seed 60619483); tapegrad computes every position from the old values
        return True
    if cat == "missing-error" and msg.startswith("tail:") and "The size of tensor a" in msg and \
            any(re.search(r"scatter_reduce_?\(.*'(am(ax|in)|prod)'", s.code) for s in prog.steps):
        # torch's bug (KNOWN: ScatterReduceBackward0): amax / amin / prod (60617723) with an
        # index smaller than src; the in-place scatter_reduce_ the same (65007611, 65008576)
        return True
    if (cat == "spurious-error" and "modified by an inplace operation" in msg
            and any(re.search(r"\bkron\(", s.code) for s in prog.steps)):
        # torch's bug: kron reshapes its operands with _unsafe_view, whose results have version
        # counters of their own, so a later in-place write into an operand escapes the check and
        # its backward reads the new values (kron(a, b) with a 0-d a requiring grad, then
        # b[...] = 0.5 under no_grad: a.grad is 0.5, not b's old value; 65006225, 65008398);
        # tapegrad's version check refuses it, as for any other op saving its operands
        return True
    if cat == "missing-error" and "conjugate bit set" in msg and \
            any(s.ctx in SAVED_HOOKS for s in prog.steps):
        # deliberate (docs/differences.md, conj): PyTorch saves a lazy conj() view, and a pack
        # hook calling numpy() on it raises; tapegrad's conj() values are materialised, so the
        # hook receives a plain tensor (x.conj().numpy() itself raises in both; 65200851)
        return True
    if (cat == "spurious-error" and "modified by an inplace operation" in msg
            and any(re.search(r"\bmatmul\(| @ ", s.code) for s in prog.steps)):
        # PyTorch's inconsistency: matmul of a 2-d (or 1-d) operand that requires grad and a
        # >= 3-d one folds the batch into an mm over a reshape of the 3-d operand's transpose,
        # a copy, so a later in-place write into that operand escapes its version check (the
        # backward reads the copy); without the fold (other shapes, or no grad wanted) PyTorch
        # refuses as tapegrad does for every shape (65200187)
        return True
    if cat == "grad" and msg.startswith("G2") and re.search(r"torch .*\bnan\b.* vs tapegrad", msg) \
            and any(re.search(r"\brenorm_?\(", s.code) for s in prog.steps):
        # torch's bug: renorm's double backward at a zero sub-tensor (norm 0, below maxnorm, so
        # renorm is the identity there) is NaN (the norm's derivative x / |x| at 0);
        # gradgradcheck fails in PyTorch on [[0, 0], [1, 2]] and passes here (65030866)
        return True
    if cat == "grad" and any(re.search(r"scatter_reduce\(.*'(prod|am(ax|in))'", s.code)
                             for s in prog.steps):
        # torch's bug (KNOWN: ScatterReduceBackward0): with an index smaller than src, 'prod'
        # and (with include_self=False) 'amax' / 'amin' give src gradient at positions the
        # index does not reach (63014141, 62677748: FD agrees with tapegrad's zeros there)
        return True
    if cat == "grad" and any(re.search(r"\b(hardtanh|relu6|Hardtanh|ReLU6)_?\(", s.code)
                             for s in prog.steps):
        # torch's bug: hardtanh's (and relu6's) backward at a NaN input gives 0 in its vectorized
        # loop and passes the gradient in its scalar tail (16 NaNs: all 0; 17: a 1 at the last;
        # 6: all 1); tapegrad passes it everywhere, as the tail (60635483; the nn modules too,
        # as a parametrization: 60652289)
        return True
    if (cat == "missing-error" and msg.startswith("tail: torch")
            and re.search(r"'NoneType' object|operand type\(s\) for .*'NoneType'", msg)
            and any(".register_hook(" in s.code for s in prog.steps)):
        # known (docs/differences.md, session 25): PyTorch calls a tensor hook with None where
        # the node ran but left that tensor's gradient undefined (a leaf's in a second pass
        # that does not reach it: 60643475, 60648587; one output of a multi-output node run
        # for another's: 60650740, eigvalsh); tapegrad calls hooks with gradients only
        return True
    if (cat == "missing-error" and "Expected a proper Tensor but got None" in msg
            and any(re.search(r"\bdist\(.*, 0\)", s.code) for s in prog.steps)):
        # torch's bug (docs/differences.md, session 29): dist(a, b, 0)'s backward hands an
        # undefined gradient to the next op, which raises (dist(a, b, 0).backward() alone raises
        # it); the 0-"norm" has no gradient, tapegrad's None as vector_norm(ord=0)'s (65000474)
        return True
    if (cat == "missing-error" and "CopySlices returned an invalid gradient" in msg
            and any(re.search(r"\.scatter(_add|_reduce)?_\(", s.code) for s in prog.steps)):
        # torch's bug: an in-place scatter of an empty src into an empty tensor returns a
        # gradient of the index's shape at double backward ([1, 0] for [2, 0]; 65000452)
        return True
    if cat in ("grad", "grad-none", "signed-zero") and any(
            re.search(r"\bldexp_?\(", s.code) for s in prog.steps):
        # torch's bug (docs/differences.md, session 29): LdexpBackward0 takes 2 ** other in
        # other's integer dtype, so a negative integer exponent's gradient is 0 (and a large one
        # overflows); the derivative is 2 ** other, tapegrad's (65000304, 65000767: FD agrees)
        return True
    if cat in ("grad", "grad-none", "signed-zero") and any(
            re.search(r"\b(var|std)(_mean)?\(.*(\(\)|\[\])", s.code) for s in prog.steps):
        # torch's bug: var / std (and var_mean / std_mean) over an empty dim list reduce every
        # dim in the forward, but var_backward counts the reduced elements over the empty list,
        # 1: the gradient is 2 / (1 - correction) * grad * (x - mean), +-inf for correction=1 and
        # n times too large for correction=0 (x.var((), correction=0) of [1, 2, 4] gives
        # [-2.67, -0.67, 3.33], finite differences [-0.89, -0.22, 1.11]); tapegrad's is the
        # whole reduction's (62648798, 62650602)
        return True
    if cat in ("value", "grad", "grad-none", "signed-zero") and _orthogonal_of_singular(prog):
        # degenerate: orthogonal() of a rank-deficient weight ([[1, -1], [1, -1]]) orthogonalises
        # it by geqrf, whose last R diagonal is 0 up to rounding, and multiplies Q's column by
        # its sign: PyTorch's float32 LAPACK gives exactly 0 there (a zero column, no longer
        # orthogonal), tapegrad's 5e-17 (62710079; float64: both 5e-17, the same Q); a weight
        # with an infinity has no orthogonalisation at all (65021552)
        return True
    if (cat == "missing-error" and "index_select(): self indexing axis dim should be positive"
            in msg and msg.startswith("tail:")
            and any(re.search(r"\.index_add_?\(", s.code) for s in prog.steps)):
        # torch's bug: index_add_ into a dim of size 0 accepts an index (nothing is added), but
        # its backward index_selects the gradient there and raises; the source's gradient is
        # 0, tapegrad's (65021428: (4, 0).index_add_(-1, [0], (4, 1) source))
        return True
    if (cat == "missing-error" and "The algorithm failed to converge because the input matrix "
            "is ill-conditioned" in msg and any(re.search(r"\b(inf|nan)\b", s.code)
                                                for s in prog.steps)):
        # degenerate: PyTorch's MKL gesdd on a matrix with an infinity sometimes reports no
        # convergence and sometimes returns NaN factors (60673301: a (3, 3) batch element);
        # tapegrad's SVD of such a matrix is NaN, as PyTorch's where it returns (60620368)
        return True
    m = re.match(r"retained (v\d+)\.grad", msg)
    if cat in ("shape", "grad") and m and _view_changed_in_place(prog, m.group(1)):
        # torch's inconsistency (pytorch/pytorch#96908: in-place view ops do not call
        # rebase_history): after y.retain_grad(), y.t_() / transpose_ / swapdims_ / unsqueeze_ /
        # squeeze_ / as_strided_ leave the retains_grad hook on y's previous grad_fn, so y.grad
        # has y's old shape (y.unsqueeze_(0): y (1, 2, 3), y.grad (2, 3)); a data in-place op
        # after one (y.t_().mul_(2)) is PyTorch's INTERNAL ASSERT.  tapegrad's retained grad
        # is the gradient of y as it is (65002247)
        return True
    if (cat == "grad" and any(re.search(r"\b(F\.elu|ELU|F\.celu|CELU|F\.selu|SELU)\(", s.code)
                              for s in prog.steps)
            and any(re.search(r"\bnan\b", s.code) for s in prog.steps)):
        # torch's inconsistency: elu's (celu's, selu's) backward at a NaN input is NaN in its
        # vectorized loop (x > 0 false: grad * alpha * exp(NaN)) and the gradient itself in its
        # scalar tail (x <= 0 false): 8 float32 elements give 1 at a NaN, 18 give NaN at the
        # first ones; tapegrad's is the vectorized loop's everywhere (60653989)
        return True
    if cat == "signed-zero" and prog.cplx and re.match(
            r"step \d+ `v\d+ = (v\d+\.neg_?\(\)|-v\d+|v\d+ \*\* )", msg):
        # degenerate: PyTorch's complex negation is 0 - z in its vectorised body (-1+0j of 1+0j)
        # and -z in its scalar tail (-1-0j): an imaginary zero's sign depends on the element's
        # position (62647329, 62647773); tapegrad's is -z everywhere.  A complex power's zero
        # parts the same (std::pow's branches vs numpy's; 62645048: v ** 2.5 of a complex
        # cast of real values)
        return True
    if cat == "value" and prog.cplx and re.match(
            r"step \d+ `v\d+ = (v\d+(\.to\([^)]*\))? [-+] v\d+|torch\.(add|sub)\(|v\d+\.(add|sub)_?\()", msg) \
            and re.search(r"torch .*\bnan\b.* vs tapegrad", msg):
        # PyTorch's complex add / sub is a + alpha * b with alpha = 1 + 0j multiplied out, so an
        # infinite part of b meets alpha's 0 and turns b's other part NaN ((1.65+0j) +
        # (-inf-0.454j) is -inf+nanj, b + a is -inf-0.454j; 62659141; a cast operand the same:
        # 0.5j.to(complex64) + -inf is -inf+nanj, 65400340); tapegrad's is a + b
        return True
    if cat == "grad" and prog.cplx and _nan_where_inf(msg):
        # the same add in PyTorch's engine: two complex gradient contributions are accumulated
        # as a + 1 * b, so (0.3+0j) + (inf+nanj) is nan+nanj where tapegrad's sum is inf+nanj,
        # and a real input's gradient (its real part) NaN where tapegrad's is +-inf
        # (60667080: `z.to(torch.complex64)` used twice, once divided by 0)
        return True
    if cat == "value" and prog.cplx and re.match(
            r"step \d+ `v\d+ = (v\d+ @ v\d+|torch\.(matmul|mm|mv|addmm|addmv)\(|F\.linear\()",
            msg) and re.search(r"torch .*\bnan\b.* vs tapegrad", msg):
        # the same alpha in PyTorch's complex BLAS product (gemm / gemv: alpha * sum a b with
        # alpha = 1 + 0j multiplied out): an infinite product meets alpha's 0, NaN + NaNj where
        # the elementwise product, dot, bmm and einsum of the same operands give +-inf +-infj
        # ([[1.7+0.35j]] @ [inf-2.18j]: nan+nanj; 60660895); tapegrad's is the plain sum
        return True
    m = SATURATED_SIGMOID.match(msg)
    if cat == "value" and m:
        fn = m.group(2)
        return same_op_on_torch_input(prog, int(m.group(1)), f"{m.group(3)}.sigmoid()",
                                      lambda lib, t: getattr(lib.special, fn)(t))
    m = AMPLIFIED_UNARY.match(msg)
    if cat == "value" and m:
        var, method = (m.group(2), m.group(3)) if m.group(2) else (m.group(6), m.group(5))
        args = ast.literal_eval(f"({m.group(4)},)") if m.group(4) else ()
        apply = ((lambda lib, t: getattr(t, method)(*args)) if m.group(2)
                 else (lambda lib, t: getattr(lib, method)(t)))
        return same_op_on_torch_input(prog, int(m.group(1)), var, apply)
    if cat in ("grad", "grad-none") and prog.mode == "grad2" and prog.cplx and \
            msg.startswith(("G2", "G[")):
        # open (docs/differences.md, session 10; strict xfails in tests/test_triage10_fuzz.py):
        # second derivatives through complex ops miss their terms
        return True
    if (((cat == "spurious-error" and "modified by an inplace operation" in msg)
         or cat in ("grad", "grad-none", "signed-zero"))
            and any(s.ctx in SAVED_HOOKS for s in prog.steps)):
        # deliberate (docs/differences.md, saved-tensor hooks): with a hook that hands back the
        # saved storage itself (identity, save_on_cpu on the CPU) PyTorch skips its check for
        # in-place writes and differentiates the written value; tapegrad keeps the check, or
        # where its record kept its own copy, differentiates the saved value (60623077: FD
        # agrees with tapegrad).  Known when PyTorch raises the same error without the hooks.
        import torch
        bare = prog.derive(steps=[Step(x.code, x.out, x.nograd, x.stmt) for x in prog.steps])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = execute(torch, bare)
        errors = [e for e in run.steps + [run.tail] if e and e[0] == "err"]
        return any("modified by an inplace operation" in e[2] for e in errors)
    return False


def check_program(prog, runs=None):
    """The findings of one program; `runs`, when a list, receives (torch run, tapegrad run)."""
    import tapegrad
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_run = execute(torch, prog)
        g_run = execute(tapegrad, prog, live=t_run.live)
        if (t_run.tail[0] == "err" and "modified by an inplace operation" in t_run.tail[2]
                and g_run.tail[0] == "ok"):
            # torch saved a value that a later in-place op overwrote, tapegrad's backward did not
            # need it (or kept its own copy): its gradients must then be what torch computes
            # when it keeps the saved values (allow_mutation_on_saved_tensors)
            with torch.autograd.graph.allow_mutation_on_saved_tensors():
                t_run = execute(torch, prog)
        findings = compare_runs(prog, t_run, g_run)
        if runs is not None:
            runs[:] = [t_run, g_run]
        if prog.mode == "compile" and not findings:
            findings += compile_check(prog, t_run)
        if not findings and prog.context == "function-mode":
            findings += function_mode_check(prog, t_run, g_run)
        if not findings and prog.mode != "compile" and in_threads(prog.seed):
            findings += threads_check(prog, t_run)
    return findings


def function_mode_check(prog, t_run, g_run):
    """A pass-through TorchFunctionMode changes nothing: tapegrad's run without it must give the
    same bits (values, written variables, gradients) and the same errors."""
    import tapegrad
    bare = execute(tapegrad, prog.derive(context=None), live=t_run.live)
    pairs = [(f"step {i} `{s.code[:100]}`", a, b)
             for i, (s, a, b) in enumerate(zip(prog.steps, g_run.steps, bare.steps))]
    pairs += [(f"final {k}", g_run.final[k], bare.final.get(k)) for k in g_run.final]
    pairs += [("tail", g_run.tail, bare.tail)]
    pairs += [(k, g_run.grads[k], bare.grads.get(k)) for k in g_run.grads]
    for label, a, b in pairs:
        if not _same_outcome(a, b):
            return [("function-mode", f"{label}: in the mode {_outcome(a)}, without it "
                                      f"{_outcome(b)}")]
    return []


def _same_outcome(a, b):
    """Two results of one library (a step's ("ok", snap) / ("err", kind, msg), or a snap): the
    same error kind, or the same bits."""
    if a is None or b is None or a[0] != b[0]:
        return a is b
    if a[0] in ("ok", "err"):
        return a[1] == b[1] if a[0] == "err" else (len(a) == 1 or _same_outcome(a[1], b[1]))
    if a[0] == "seq":
        return len(a[1]) == len(b[1]) and all(map(_same_outcome, a[1], b[1]))
    return _bit_equal(a, b) if a[0] == "t" else a == b


def _outcome(a):
    if a is None:
        return "nothing"
    if a[0] == "err":
        return a[2]
    s = a[1] if a[0] == "ok" and len(a) > 1 else a
    return _desc(s) if isinstance(s, tuple) and s and s[0] in ("t", "none", "seq", "py",
                                                                 "unreadable") else "ran"


def threads_check(prog, t_run, n_threads=3):
    """The program run by several threads at once, each on its own leaves, recording, sweeping
    and dropping graphs on the one shared tape: each thread's run must be torch's."""
    import threading
    import tapegrad
    runs = [None] * n_threads
    barrier = threading.Barrier(n_threads)

    def work(i):
        barrier.wait()
        try:
            runs[i] = execute(tapegrad, prog, live=t_run.live)
        except Exception as e:  # noqa: BLE001 - a crash of the run itself is a finding
            runs[i] = e
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for i, run in enumerate(runs):
        if run is None or isinstance(run, Exception):
            return [("threads", f"thread {i}: {'hung' if run is None else repr(run)[:200]}")]
        found = compare_runs(prog, t_run, run)
        if found:
            return [("threads", f"thread {i}: [{c}] {m}") for c, m in found]
    return []


def check_seed(seed, show_known=False, verdict=None):
    """(program, findings) of one seed; `verdict`, when a dict, receives the adjudication of
    its value/gradient findings against float64 finite differences (tools/fuzz_adjudicate.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = generate(seed)
    runs = []
    findings = check_program(prog, runs)
    if not show_known:
        findings = [(c, m) for c, m in findings if not known(c, m)]
        if findings and all(known_for(prog, c, m) for c, m in findings):
            findings = []
    if verdict is not None and runs:
        import fuzz_adjudicate
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = fuzz_adjudicate.adjudicate(prog, findings, *runs)
        if v:
            verdict.update(v)
    return prog, findings


def shrink(prog, category):
    """Drop steps (and the steps that read what they define) while a finding of `category`
    remains; returns the smallest program found."""
    def without(p, i):
        gone = {p.steps[i].out} if p.steps[i].out else set()
        keep = []
        for j, s in enumerate(p.steps):
            if j == i or (s.uses & gone):
                if s.out:
                    gone.add(s.out)
                continue
            keep.append(s)
        return p.derive(steps=keep, loss_vars=[v for v in p.loss_vars if v not in gone],
                        retained=[v for v in p.retained if v not in gone])

    def fails(p):
        try:
            return any(c == category for c, _ in check_program(p))
        except Exception:  # noqa: BLE001 - a shrunk program the checker cannot run
            return False

    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(prog.steps))):
            cand = without(prog, i)
            if len(cand.steps) < len(prog.steps) and fails(cand):
                prog, changed = cand, True
                break
    # the tail too: fewer loss terms, then a plain backward instead of the double one
    for v in list(prog.loss_vars):
        cand = prog.derive(loss_vars=[x for x in prog.loss_vars if x != v])
        if cand.loss_vars and fails(cand):
            prog = cand
    return prog


# -- driver (shared with tools/fuzz_surface.py) ---------------------------------------------------

def checker(kind):
    if kind == "programs":
        def check(seed):
            verdict = {}
            return _summary(*check_seed(seed, verdict=verdict), verdict)
        return check
    if kind == "transforms":
        import fuzz_transforms      # the function transforms (torch.func, forward AD, ...)
        return fuzz_transforms.summary
    if kind == "formats":
        import fuzz_formats         # checkpoint format, sparse layouts, torch.masked
        return fuzz_formats.summary
    return lambda seed: _summary_surface(*surface.check_seed(seed))


def _summary(prog, findings, verdict=None):
    recs = [{"op": "program", "mode": prog.mode, "cat": c, "msg": m} for c, m in findings]
    for rec in recs:
        if verdict and rec["cat"] in ("value", "grad", "signed-zero", "compile"):
            rec.update(verdict)
    return recs


def _summary_surface(prog, findings):
    return [{"op": prog.op, "mode": prog.mode, "cat": c, "msg": m, "desc": prog.case.desc}
            for c, m in findings]


def worker(kind, start, stop, progress_path):
    check = checker(kind)
    surface.PROGRESS["path"] = progress_path
    for seed in range(start, stop):
        surface.PROGRESS["seed"] = seed
        with open(progress_path, "w") as f:
            f.write(str(seed))
        try:
            recs = check(seed)
        except Exception as e:  # noqa: BLE001 - a fuzzer bug: report, keep going
            recs = [{"op": "?", "cat": "fuzzer-error", "msg": repr(e)[:300]}]
        for rec in recs:
            print(json.dumps(dict(rec, seed=seed, kind=kind)), flush=True)
    print(json.dumps({"done": stop}), flush=True)


def run_worker(args, progress, timeout):
    """Run one worker; (exit code or "timeout", its stdout).  `timeout` bounds one seed, not the
    batch: on a loaded machine a whole batch may take long while no program hangs."""
    with tempfile.TemporaryFile("w+") as sink:
        p = subprocess.Popen(args, stdout=sink, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
        current, since, hung = None, time.time(), False
        while p.poll() is None:
            time.sleep(0.5)
            try:
                now = open(progress).read()
            except OSError:
                now = None
            if now != current:
                current, since = now, time.time()
            elif time.time() - since > timeout:
                p.kill()
                p.wait()
                hung = True
        rc = "timeout" if hung else p.returncode
        sink.seek(0)
        return rc, sink.read()


def drive(kinds, first, seconds, batch, out_path, timeout):
    """Run batches of seeds in subprocesses (alternating the kinds) until `seconds` pass; a
    worker that dies or hangs is reported with the seed it was running."""
    t_end = time.time() + seconds
    seeds = {k: first for k in kinds}
    n = {k: 0 for k in kinds}
    findings = []
    progress = tempfile.mktemp(prefix="fuzz_progress_")
    turn = 0
    # findings are appended batch by batch, so a long run can be triaged while it goes on
    out = open(out_path, "w")
    while time.time() < t_end:
        kind = kinds[turn % len(kinds)]
        turn += 1
        seed = seeds[kind]
        args = [sys.executable, os.path.abspath(__file__), "--worker", f"{seed}:{seed + batch}",
                "--kind", kind, "--progress", progress]
        rc, stdout = run_worker(args, progress, timeout)
        done = None
        for line in stdout.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "done" in rec:
                done = rec["done"]
            else:
                findings.append(rec)
                out.write(json.dumps(rec) + "\n")
        if done is None:
            try:
                where = open(progress).read().split()
                crashed = int(where[0])
            except (OSError, ValueError, IndexError):
                crashed, where = seed, []
            # (a process that dies while PyTorch runs the program is PyTorch's crash)
            lib = where[1] if len(where) > 1 else "?"
            findings.append({"seed": crashed, "kind": kind, "op": "?",
                             "cat": "torch-crash" if lib == "torch" else "process-crash",
                             "msg": f"worker exit {rc} (crash or hang) while {lib} ran it"})
            out.write(json.dumps(findings[-1]) + "\n")
            n[kind] += crashed - seed + 1
            seeds[kind] = crashed + 1
        else:
            n[kind] += batch
            seeds[kind] = seed + batch
        out.write(json.dumps({"ran": dict(n)}) + "\n")
        out.flush()
    out.close()
    summary = {}
    for rec in findings:
        key = (rec.get("kind"), rec["cat"], rec.get("op"), rec["msg"][:70])
        summary.setdefault(key, []).append(rec["seed"])
    runs = ", ".join(f"{n[k]} {k} programs (seeds {first}..{seeds[k] - 1})" for k in kinds)
    print(f"{runs}; {len(findings)} findings, {len(summary)} distinct; written to {out_path}")
    for (kind, cat, op_, msg), ss in sorted(summary.items(), key=lambda kv: -len(kv[1])):
        print(f"  {kind} [{cat}] {op_}: {msg} ... x{len(ss)} seeds {ss[:5]}")
    import fuzz_adjudicate
    print("\n".join(fuzz_adjudicate.report(findings)))
    return n, findings


def repro(seed, do_shrink=True):
    verdict = {}
    prog, findings = check_seed(seed, show_known=True, verdict=verdict)
    print(f"seed {seed}: mode={prog.mode}, {len(prog.steps)} steps")
    for c, m in findings:
        print(f"[{c}] {m}")
    if verdict:
        print(f"verdict: {verdict['verdict']}: {verdict['evidence']}")
    if not findings:
        print("no findings")
        return 0
    small = shrink(prog, findings[0][0]) if do_shrink else prog
    print(f"\n# minimal program ({len(small.steps)} steps) for [{findings[0][0]}]:")
    for c, m in check_program(small):
        print(f"# [{c}] {m[:300]}")
    print(small.script())
    if small.mode == "compile":
        print("# ... and the body above as a function of its leaves under tapegrad.compile, "
              "called with fresh leaf values (see compile_check)")
    return 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--kind", default="programs,surface",
                    help="programs, surface, transforms, formats (comma-separated)")
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=300, help="seconds one program may take")
    ap.add_argument("--out", default="fuzz_findings.jsonl")
    ap.add_argument("--repro", type=int, default=None)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--seeds", default=None, help="A:B, in process")
    ap.add_argument("--all", action="store_true", help="also report the KNOWN differences")
    ap.add_argument("--report", default=None,
                    help="print a findings file grouped by verdict (tapegrad's possible errors first)")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--progress", default=None)
    a = ap.parse_args(argv)
    kinds = a.kind.split(",")
    if a.report:
        import fuzz_adjudicate
        with open(a.report) as f:
            recs = [json.loads(line) for line in f if line.strip()]
        print("\n".join(fuzz_adjudicate.report([r for r in recs if "cat" in r])))
        ran = [r["ran"] for r in recs if "ran" in r]
        print(f"programs run: {ran[-1] if ran else 0}")
        return 0
    if a.worker:
        s, e = map(int, a.worker.split(":"))
        worker(kinds[0], s, e, a.progress)
        return 0
    if a.repro is not None:
        if kinds == ["surface"]:
            return surface.main(["--repro", str(a.repro)])
        return repro(a.repro, not a.no_shrink)
    if a.seeds:
        s, e = map(int, a.seeds.split(":"))
        for seed in range(s, e):
            try:
                prog, findings = check_seed(seed, show_known=a.all)
            except Exception:  # noqa: BLE001 - a fuzzer bug: show it, keep going
                print(f"seed {seed} fuzzer-error\n{traceback.format_exc()}")
                continue
            if findings:
                cats = sorted({c for c, _ in findings})
                print(f"seed {seed} {cats} {prog.mode}"
                      + (f" [{prog.context}]" if prog.context else "") + f" {len(prog.steps)} steps: "
                      f"{findings[0][1][:400]}", flush=True)
        return 0
    drive(kinds, a.first, a.seconds, a.batch, a.out, a.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
