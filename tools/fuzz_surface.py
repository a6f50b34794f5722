"""Differential fuzzer: random small programs over tapegrad's PyTorch-compatible surface,
run in tapegrad and in PyTorch, compared.

    python tools/fuzz_surface.py --seconds 600          # subprocess-isolated batches
    python tools/fuzz_surface.py --repro 1234           # one program, in process, verbose
    python tools/fuzz_surface.py --seeds 0:200 --op sort  # only programs whose main op is `sort`

A program: fresh leaves (random shapes with 0- and 1-size dims, float32/float64/int/bool,
NaN/inf now and then, contiguous or a transposed / step-sliced view of a larger leaf), one op of
the new surface with random valid or invalid arguments, then maybe a chain of further ops on its
first float output (other new ops, existing ops), then one of: backward of a random weighted
sum (first derivatives of every leaf and parameter, second derivatives through create_graph),
an in-place write to the output before backward (the version check must fire exactly when
torch's does), the op under no_grad, or the whole function under tapegrad.compile (compiled vs
eager on two calls).  Compared: exception types (both raise or neither), values, dtypes, shapes,
requires_grad, gradients.

Every finding names its seed; `--repro SEED` reruns it.  The worker prints each seed before
running it, so a crash (segfault, abort, hang) of the worker is reported with its seed and the
driver continues after it.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
import traceback
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


# -- leaves ---------------------------------------------------------------------------------------

class Leaf:
    """A fresh input: `array` holds the base values (already laid out for `layout`), the program
    sees `view(base)` of shape `shape`; gradients are compared on the base."""

    def __init__(self, shape, dtype, array, layout, requires_grad):
        self.shape, self.dtype, self.array = tuple(shape), dtype, array
        self.layout, self.requires_grad = layout, requires_grad

    def describe(self):
        return f"Leaf({self.shape}, {self.dtype}, {self.layout}, rg={self.requires_grad})"


FLOATS = ("float32", "float64")


def rand_dim(r, lo=0, hi=4):
    choices = [d for d in (0, 1, 2, 3, 4, 5) if lo <= d <= hi]
    weights = [{0: 0.5, 1: 2, 2: 3, 3: 3, 4: 2, 5: 1}[d] for d in choices]
    return r.choices(choices, weights)[0]


def rand_shape(r, ndim, lo=0, hi=4):
    return tuple(rand_dim(r, lo, hi) for _ in range(ndim))


def make_values(r, shape, dtype, style=None):
    nr = np.random.default_rng(r.randrange(2 ** 32))
    if dtype == "bool":
        return nr.random(shape) < 0.5
    if dtype in ("int64", "int32", "uint8"):
        lo = 0 if dtype == "uint8" else -5
        return nr.integers(lo, 6, size=shape).astype(dtype)
    style = style or r.choices(["normal", "ties", "special", "zeros", "positive"],
                               [6, 1, 1, 1, 1])[0]
    a = nr.standard_normal(shape)
    if style == "ties":
        a = np.round(a * 2) / 2
    elif style == "zeros":
        a = np.where(nr.random(shape) < 0.3, 0.0, a)
    elif style == "positive":
        a = np.abs(a) + 0.1
    elif style == "special" and a.size:
        flat = a.reshape(-1)
        for _ in range(r.randint(1, 2)):
            flat[r.randrange(flat.size)] = r.choice([np.nan, np.inf, -np.inf, 0.0])
    return a.astype(dtype)


def new_leaf(r, shape, dtype=None, style=None, requires_grad=None, layout=None):
    dtype = dtype or r.choice(FLOATS)
    if requires_grad is None:
        requires_grad = dtype in FLOATS and r.random() < 0.85
    if layout is None:
        layout = r.choices(["c", "T", "step"], [6, 2, 2])[0] if len(shape) else "c"
    if layout == "T" and len(shape) < 2:
        layout = "c"
    if layout == "T":
        base_shape = tuple(reversed(shape))
    elif layout == "step":
        base_shape = (shape[0] * 2,) + tuple(shape[1:])
    else:
        base_shape = tuple(shape)
    arr = make_values(r, base_shape, dtype, style)
    return Leaf(shape, dtype, arr, layout, requires_grad)


def build_leaf(lib, leaf):
    base = lib.tensor(leaf.array)
    if leaf.requires_grad:
        base.requires_grad_(True)
    if leaf.layout == "T":
        view = base.permute(*reversed(range(base.dim())))
    elif leaf.layout == "step":
        view = base[::2]
    else:
        view = base
    return base, view


# -- the op table -----------------------------------------------------------------------------------

OPS = {}


def op(name, weight=1.0, since=0):
    """Register an op generator; `since`: the first seed that draws it (an op added later
    leaves the programs of lower seeds as they were)."""
    def deco(fn):
        OPS[name] = (fn, weight, since)
        return fn
    return deco


class Case:
    """What an op generator returns: the leaves it needs and `call(lib, views, env)`."""

    def __init__(self, leaves, call, desc, unordered=False, no_grad_check=False, modules=None,
                 grad_tol=None, skip_indices=False, torch_unspecified=None):
        self.leaves, self.call, self.desc = leaves, call, desc
        # why torch's result is no spec here (uninitialised memory, ...): findings are known
        self.torch_unspecified = torch_unspecified
        self.unordered = unordered          # outputs compared after sorting (topk sorted=False)
        self.no_grad_check = no_grad_check
        self.modules = modules or {}        # name -> (ctor(lib), ) built once per lib
        self.grad_tol = grad_tol
        self.skip_indices = skip_indices


def rdim(r, nd, invalid=0.05):
    if r.random() < invalid:
        return r.choice([nd, -nd - 1, nd + 2])
    if nd == 0:
        return r.choice([0, -1])
    return r.randrange(-nd, nd)


@op("sort", 2)
def g_sort(r):
    nd = r.randint(0, 3)
    stable = r.random() < 0.5
    dt = r.choice(FLOATS + ("int64",))
    x = new_leaf(r, rand_shape(r, nd), dt, style=None if stable else "normal")
    if not stable and dt != "int64" and x.array.size:
        x.array = np.where(np.isnan(x.array), 0.0, x.array).astype(dt)
    d, desc = rdim(r, nd), r.random() < 0.5
    kind = r.choice(["sort", "argsort", "method"])
    if kind == "sort":
        return Case([x], lambda L, v: L.sort(v[0], dim=d, descending=desc, stable=stable),
                    f"torch.sort(x, dim={d}, descending={desc}, stable={stable})",
                    skip_indices=not stable and dt == "int64")
    if kind == "argsort":
        return Case([x], lambda L, v: L.argsort(v[0], dim=d, descending=desc, stable=stable),
                    f"torch.argsort(x, dim={d}, descending={desc}, stable={stable})",
                    skip_indices=not stable and dt == "int64")
    return Case([x], lambda L, v: v[0].sort(d, desc), f"x.sort({d}, {desc})",
                skip_indices=True)


@op("topk", 2)
def g_topk(r):
    nd = r.randint(0, 3)
    x = new_leaf(r, rand_shape(r, nd), r.choice(FLOATS + ("int64",)), style="normal")
    d = rdim(r, nd)
    size = x.shape[d] if (nd and -nd <= d < nd) else 1
    k = r.choice([0, size, max(size - 1, 0), r.randint(0, max(size, 0))] + ([size + 1] if r.random() < 0.1 else []))
    if r.random() < 0.03:
        k = -1
    largest, srt = r.random() < 0.6, r.random() < 0.8
    uniq = x.array.size == len(np.unique(x.array))
    return Case([x], lambda L, v: L.topk(v[0], k, dim=d, largest=largest, sorted=srt),
                f"torch.topk(x, {k}, dim={d}, largest={largest}, sorted={srt})",
                unordered=not srt, skip_indices=not uniq)


@op("cumsum", 2)
def g_cumsum(r):
    nd = r.randint(0, 3)
    dt = r.choice(FLOATS + ("int64", "bool", "int32"))
    x = new_leaf(r, rand_shape(r, nd), dt)
    d = rdim(r, nd)
    odt = r.choice([None, None, "float64", "float32", "int64"])
    name = r.choice(["cumsum", "cumprod"])
    if odt is None:
        return Case([x], lambda L, v: getattr(L, name)(v[0], d), f"torch.{name}(x, {d})")
    # (dtype=float32 computes a float64 leaf's gradients in float32: their rounding, 1e-6
    # apart in second derivatives, is no finding at float64's tolerance; 60731740, 60732961)
    return Case([x], lambda L, v: getattr(L, name)(v[0], d, dtype=getattr(L, odt)),
                f"torch.{name}(x, {d}, dtype={odt})",
                grad_tol=tolerances("float32") if odt == "float32" else None)


@op("log", 1)
def g_log(r):
    x = new_leaf(r, rand_shape(r, r.randint(0, 3)), r.choice(FLOATS + ("int64", "bool")),
                 style=r.choice(["positive", "special", "normal", "zeros"]))
    name = r.choice(["log10", "log2"])
    if r.random() < 0.5:
        return Case([x], lambda L, v: getattr(L, name)(v[0]), f"torch.{name}(x)")
    return Case([x], lambda L, v: getattr(v[0], name)(), f"x.{name}()")


@op("flip_roll", 2)
def g_flip(r):
    nd = r.randint(0, 4)
    x = new_leaf(r, rand_shape(r, nd), r.choice(FLOATS + ("int64", "bool")))
    if r.random() < 0.5:
        dims = tuple(rdim(r, nd) for _ in range(r.randint(0, min(nd, 3) if nd else 1)))
        if r.random() < 0.5:
            return Case([x], lambda L, v: L.flip(v[0], dims), f"torch.flip(x, {dims})")
        return Case([x], lambda L, v: v[0].flip(*dims), f"x.flip(*{dims})")
    if r.random() < 0.3:
        s = r.randint(-7, 7)
        return Case([x], lambda L, v: L.roll(v[0], s), f"torch.roll(x, {s})")
    n = r.randint(1, 3)
    dims = tuple(rdim(r, nd) for _ in range(n))
    shifts = tuple(r.randint(-7, 7) for _ in range(n if r.random() < 0.9 else n + 1))
    if len(shifts) == 1 and r.random() < 0.5:
        shifts, dims = shifts[0], dims[0]
    return Case([x], lambda L, v: L.roll(v[0], shifts, dims), f"torch.roll(x, {shifts}, {dims})")


@op("diag_trace", 2)
def g_diag(r):
    nd = r.choice([1, 2, 2, 0, 3])
    x = new_leaf(r, rand_shape(r, nd), r.choice(FLOATS + ("int64", "bool")))
    if r.random() < 0.6:
        k = r.randint(-4, 4)
        return Case([x], lambda L, v: L.diag(v[0], k), f"torch.diag(x, {k})")
    return Case([x], lambda L, v: L.trace(v[0]), "torch.trace(x)")


@op("meshgrid", 1)
def g_meshgrid(r):
    n = r.randint(1, 3)
    xs = [new_leaf(r, rand_shape(r, r.choice([1, 1, 1, 0])), r.choice(FLOATS)) for _ in range(n)]
    ind = r.choice(["ij", "xy"])
    return Case(xs, lambda L, v: L.meshgrid(*v, indexing=ind),
                f"torch.meshgrid(*xs, indexing={ind!r})")


@op("hist", 1)
def g_hist(r):
    if r.random() < 0.5:
        x = new_leaf(r, rand_shape(r, r.randint(0, 2)), r.choice(FLOATS + ("int64",)))
        bins = r.choice([1, 3, 5, 10, 0])
        lo, hi = r.choice([(0, 0), (-1, 1), (0.5, 0.5), (1, -1), (-2.0, 3.0)])
        return Case([x], lambda L, v: L.histc(v[0], bins, lo, hi), f"torch.histc(x, {bins}, {lo}, {hi})")
    x = new_leaf(r, (rand_dim(r),), r.choice(["int64", "int64", "int32", "float32", "uint8"]))
    if x.dtype != "float32":
        x.array = np.abs(x.array)
    w = new_leaf(r, x.shape if r.random() < 0.9 else (x.shape[0] + 1,), r.choice(FLOATS))
    ml = r.choice([0, 0, 3, 10])
    if r.random() < 0.5:
        return Case([x, w], lambda L, v: L.bincount(v[0], v[1], ml), f"torch.bincount(x, w, {ml})")
    return Case([x], lambda L, v: L.bincount(v[0], minlength=ml), f"torch.bincount(x, minlength={ml})")


@op("histogram", 1)
def g_histogram(r):
    nd = r.randint(0, 2)
    dt = r.choice(FLOATS + (("int64",) if r.random() < 0.05 else ()))
    x = new_leaf(r, rand_shape(r, nd), dt, style=r.choice(["normal", "ties", "special"]))
    kw = {}
    if r.random() < 0.5:
        kw["weight"] = new_leaf(r, x.shape if r.random() < 0.95 else (x.shape[0] + 1,) if nd else (2,),
                                dt, requires_grad=False, layout="c")
    if r.random() < 0.5:
        kw["density"] = r.random() < 0.5
    if r.random() < 0.3:
        edges = new_leaf(r, (r.randint(1, 5),), dt, style="normal", requires_grad=False, layout="c")
        edges.array = np.sort(edges.array)      # (unsorted edges: undefined in PyTorch)
        leaves = [x, edges] + ([kw.pop("weight")] if "weight" in kw else [])
        has_w = len(leaves) == 3
        return Case(leaves, lambda L, v: L.histogram(v[0], v[1], weight=v[2] if has_w else None, **kw),
                    f"torch.histogram(x, edges, weight={has_w}, {kw})")
    bins = r.choice([1, 3, 5, 0])
    if r.random() < 0.5:
        kw["range"] = r.choice([(-1.0, 1.0), (0.5, 0.5), (1.0, -1.0), (-2.0, 3.0)])
    leaves = [x] + ([kw.pop("weight")] if "weight" in kw else [])
    has_w = len(leaves) == 2
    return Case(leaves, lambda L, v: L.histogram(v[0], bins, weight=v[1] if has_w else None, **kw),
                f"torch.histogram(x, {bins}, weight={has_w}, {kw})")


# special functions of two arguments: (name, torch path, style of a, style of x)
SPECIAL2 = {
    "igamma": ("igamma", "positive", "positive"),
    "igammac": ("igammac", "positive", "positive"),
    "gammainc": ("special.gammainc", "positive", "normal"),
    "gammaincc": ("special.gammaincc", "normal", "positive"),
    "zeta": ("special.zeta", "positive", "positive"),
    "xlogy": ("xlogy", "zeros", "positive"),
    "xlog1py": ("special.xlog1py", "zeros", "normal"),
}


def _path(L, path):
    for part in path.split("."):
        L = getattr(L, part)
    return L


@op("special2", 2)
def g_special2(r):
    name = r.choice(sorted(SPECIAL2) + ["polygamma", "mvlgamma"])
    nd = r.randint(0, 2)
    s = rand_shape(r, nd)
    if name == "polygamma":
        n = r.choice([0, 1, 2, 3, -1])
        x = new_leaf(r, s, r.choice(FLOATS), style=r.choice(["positive", "normal", "special"]))
        return Case([x], lambda L, v: L.polygamma(n, v[0]), f"torch.polygamma({n}, x)")
    if name == "mvlgamma":
        p = r.choice([1, 2, 3])
        x = new_leaf(r, s, r.choice(FLOATS), style="positive")
        x.array = (x.array + (p - 1) / 2 + (0.0 if r.random() < 0.9 else -5.0)).astype(x.dtype)
        return Case([x], lambda L, v: L.mvlgamma(v[0], p), f"torch.mvlgamma(x, {p})")
    path, sa, sx = SPECIAL2[name]
    s2 = tuple(1 if r.random() < 0.3 else d for d in s)[r.randint(0, nd):]
    dt = r.choice(FLOATS)
    a = new_leaf(r, s, dt, style=sa if r.random() < 0.85 else "special")
    x = new_leaf(r, s2, dt if r.random() < 0.9 else r.choice(FLOATS + ("int64",)),
                 style=sx if r.random() < 0.85 else "special")
    if r.random() < 0.15:
        c = r.choice([0.5, 2, 0])
        return Case([a], lambda L, v: _path(L, path)(v[0], c), f"torch.{path}(a, {c})")
    return Case([a, x], lambda L, v: _path(L, path)(v[0], v[1]), f"torch.{path}(a, x)")


@op("unique", 1)
def g_unique(r):
    nd = r.randint(0, 3)
    x = new_leaf(r, rand_shape(r, nd), r.choice(FLOATS + ("int64", "bool")), style="ties")
    ri, rc = r.random() < 0.5, r.random() < 0.5
    d = None if r.random() < 0.6 else rdim(r, nd)
    return Case([x], lambda L, v: L.unique(v[0], sorted=True, return_inverse=ri,
                                           return_counts=rc, dim=d),
                f"torch.unique(x, return_inverse={ri}, return_counts={rc}, dim={d})")


@op("isclose", 1)
def g_isclose(r):
    nd = r.randint(0, 3)
    s = rand_shape(r, nd)
    s2 = tuple(1 if r.random() < 0.3 else d for d in s)
    dt = r.choice(FLOATS + ("int64",))
    a = new_leaf(r, s, dt, style="special")
    b = new_leaf(r, s2, dt if r.random() < 0.9 else "float64", style="special")
    if r.random() < 0.5 and a.shape == b.shape and a.dtype == b.dtype and a.layout == b.layout == "c":
        b.array = a.array.copy()
    en = r.random() < 0.5
    rt, at = r.choice([(1e-5, 1e-8), (0, 0), (0.1, 0.1)])
    name = r.choice(["isclose", "allclose", "equal"])
    if name == "equal":
        return Case([a, b], lambda L, v: L.equal(v[0], v[1]), "torch.equal(a, b)")
    return Case([a, b], lambda L, v: getattr(L, name)(v[0], v[1], rt, at, equal_nan=en),
                f"torch.{name}(a, b, {rt}, {at}, equal_nan={en})")


# contractions

@op("einsum", 3)
def g_einsum(r):
    letters = "abcde"
    sizes = {c: rand_dim(r, 0, 3) for c in letters}
    n = r.randint(1, 3)
    terms, leaves = [], []
    ell_shape = rand_shape(r, r.randint(0, 2), 1, 3) if r.random() < 0.25 else None
    for _ in range(n):
        k = r.randint(0, 3)
        labs = [r.choice(letters[:4]) for _ in range(k)]
        use_ell = ell_shape is not None and r.random() < 0.8
        shape = [sizes[c] for c in labs]
        term = "".join(labs)
        if use_ell:
            pos = r.randint(0, len(labs))
            es = tuple(1 if r.random() < 0.3 else d for d in ell_shape)
            es = es[r.randint(0, len(es)):] if es else es
            shape = shape[:pos] + list(es) + shape[pos:]
            term = term[:pos] + "..." + term[pos:]
        terms.append(term)
        leaves.append(new_leaf(r, tuple(shape), r.choice(FLOATS)))
    # mixed dtypes (an error), with every operand non-empty: PyTorch's einsum of an empty
    # contraction returns zeros of the promoted dtype without its dtype check (seed 60609393)
    if r.random() < 0.1 and all(leaf.array.size for leaf in leaves):
        leaves[-1].dtype = "float64"
        leaves[-1].array = leaves[-1].array.astype("float64")
        leaves[0].array = leaves[0].array.astype("float32")
        leaves[0].dtype = "float32"
    eq = ",".join(terms)
    if r.random() < 0.6:
        used = sorted(set("".join(t.replace("...", "") for t in terms)))
        out = [c for c in used if r.random() < 0.5]
        r.shuffle(out)
        out = "".join(out)
        if any("..." in t for t in terms) and r.random() < 0.8:
            p = r.randint(0, len(out))
            out = out[:p] + "..." + out[p:]
        eq += "->" + out
    return Case(leaves, lambda L, v: L.einsum(eq, *v), f"torch.einsum({eq!r}, ...)")


@op("addmm", 2)
def g_addmm(r):
    n, m, p = rand_dim(r), rand_dim(r), rand_dim(r)
    beta, alpha = r.choice([1, 0, 0.5, -2]), r.choice([1, 0, 2.5])
    dt = r.choice(FLOATS + ("int64",) * (r.random() < 0.15))
    if dt == "int64":
        beta, alpha = r.choice([1, 0, 2]), r.choice([1, 0, 3, 0.5])
    kind = r.random()
    if kind < 0.3:
        # the vector and outer-product relatives: addmv, addr, addbmm
        B = rand_dim(r)
        which = r.choice(["addmv", "addr", "addbmm"])
        shapes = {"addmv": (r.choice([(n,), (1,), ()]), (n, m), (m,)),
                  "addr": (r.choice([(n, m), (m,), (1, m), ()]), (n,), (m,)),
                  "addbmm": (r.choice([(n, p), (p,), ()]), (B, n, m), (B, m, p))}[which]
        a, b, c = (new_leaf(r, sh, dt) for sh in shapes)
        return Case([a, b, c], lambda L, v: getattr(L, which)(v[0], v[1], v[2], beta=beta, alpha=alpha),
                    f"torch.{which}(a{shapes[0]}, b{shapes[1]}, c{shapes[2]}, beta={beta}, alpha={alpha})")
    if kind < 0.65:
        ishape = r.choice([(n, p), (p,), (1, p), (n, 1), ()])
        a = new_leaf(r, ishape, dt, style=r.choice(["normal", "special"]))
        b, c = new_leaf(r, (n, m), dt), new_leaf(r, (m, p), dt if r.random() < 0.95 else "float64")
        return Case([a, b, c], lambda L, v: L.addmm(v[0], v[1], v[2], beta=beta, alpha=alpha),
                    f"torch.addmm(a{ishape}, b{(n, m)}, c{(m, p)}, beta={beta}, alpha={alpha})")
    B = rand_dim(r)
    ishape = r.choice([(B, n, p), (n, p), (1, n, p), (p,), (B, 1, p)])
    a = new_leaf(r, ishape, dt, style=r.choice(["normal", "special"]))
    b, c = new_leaf(r, (B, n, m), dt), new_leaf(r, (B, m, p), dt)
    return Case([a, b, c], lambda L, v: L.baddbmm(v[0], v[1], v[2], beta=beta, alpha=alpha),
                f"torch.baddbmm(a{ishape}, b{(B, n, m)}, c{(B, m, p)}, beta={beta}, alpha={alpha})")


# nn: convolution, pooling, resampling, batch norm

def _spatial(r, nd, batched=True, lo=1, hi=6):
    shape = ((rand_dim(r, 1, 3),) if batched else ()) + (rand_dim(r, 1, 4),) + tuple(
        r.randint(lo, hi) for _ in range(nd))
    return shape


@op("conv", 3)
def g_conv(r):
    nd = r.choice([1, 2])
    transposed = r.random() < 0.35
    groups = r.choice([1, 1, 2])
    cin = groups * r.randint(1, 2)
    cout = groups * r.randint(1, 2)
    batched = r.random() < 0.85
    spatial = tuple(r.randint(1, 6) for _ in range(nd))
    xs = ((r.randint(1, 2),) if batched else ()) + (cin,) + spatial
    k = tuple(r.randint(1, 3) for _ in range(nd))
    stride = r.choice([1, 1, 2, 3])
    dil = r.choice([1, 1, 2])
    dt = r.choice(FLOATS)
    x = new_leaf(r, xs, dt)
    # (finite weights: where an inf weight meets padding, the result depends on the algorithm -
    # torch's im2col also gives 0 * inf = NaN - so it is not a spec to compare against)
    if transposed:
        w = new_leaf(r, (cin, cout // groups) + k, dt, style="normal")
    else:
        w = new_leaf(r, (cout, cin // groups) + k, dt, style="normal")
    b = new_leaf(r, (cout,), dt) if r.random() < 0.6 else None
    leaves = [x, w] + ([b] if b else [])
    fname = ("conv_transpose" if transposed else "conv") + f"{nd}d"
    if transposed:
        pad = r.randint(0, 2)
        op_ = r.randint(0, max(stride, dil) - 1) if r.random() < 0.5 else 0
        kw = dict(stride=stride, padding=pad, output_padding=op_, groups=groups, dilation=dil)
    else:
        pad = r.choice([0, 1, 2, "same", "valid"])
        if pad == "same":
            stride = 1
        kw = dict(stride=stride, padding=pad, dilation=dil, groups=groups)

    def call(L, v):
        return getattr(L.nn.functional, fname)(v[0], v[1], v[2] if len(v) > 2 else None, **kw)
    return Case(leaves, call, f"F.{fname}(x{xs}, w{w.shape}, bias={b is not None}, {kw})")


@op("pool", 3)
def g_pool(r):
    nd = r.choice([1, 2])
    batched = r.random() < 0.8
    x = new_leaf(r, _spatial(r, nd, batched), r.choice(FLOATS),
                 style=r.choice(["normal", "ties", "special", "normal"]))
    k = r.randint(1, 3)
    s = r.choice([None, 1, 2, 3])
    pad = r.randint(0, k // 2) if r.random() < 0.95 else k
    cm = r.random() < 0.4
    F = f"{nd}d"
    kind = r.choice(["max", "max", "avg", "adaptive_avg", "adaptive_max", "unpool"])
    if kind == "max":
        dil = r.choice([1, 1, 2])
        ri = r.random() < 0.5
        return Case([x], lambda L, v: getattr(L.nn.functional, "max_pool" + F)(
            v[0], k, s, pad, dil, ceil_mode=cm, return_indices=ri),
            f"F.max_pool{F}(x, {k}, {s}, {pad}, {dil}, ceil_mode={cm}, return_indices={ri})")
    if kind == "avg":
        cip = r.random() < 0.5
        kw = dict(ceil_mode=cm, count_include_pad=cip)
        if nd == 2 and r.random() < 0.3:
            kw["divisor_override"] = r.choice([1, 3])
        return Case([x], lambda L, v: getattr(L.nn.functional, "avg_pool" + F)(v[0], k, s, pad, **kw),
                    f"F.avg_pool{F}(x, {k}, {s}, {pad}, {kw})")
    if kind.startswith("adaptive"):
        os_ = r.randint(1, 5) if nd == 1 else r.choice([(r.randint(1, 5), r.randint(1, 5)), r.randint(1, 4), (None, 2)])
        if kind == "adaptive_avg":
            return Case([x], lambda L, v: getattr(L.nn.functional, "adaptive_avg_pool" + F)(v[0], os_),
                        f"F.adaptive_avg_pool{F}(x, {os_})")
        ri = r.random() < 0.5
        return Case([x], lambda L, v: getattr(L.nn.functional, "adaptive_max_pool" + F)(v[0], os_, ri),
                    f"F.adaptive_max_pool{F}(x, {os_}, {ri})")
    s = s or k

    def call(L, v):
        F_ = L.nn.functional
        y, idx = getattr(F_, "max_pool" + F)(v[0], k, s, 0, return_indices=True)
        return getattr(F_, "max_unpool" + F)(y * 2, idx, k, s)
    return Case([x], call, f"F.max_unpool{F}(max_pool{F}(x, {k}, {s}, return_indices=True))")


@op("interpolate", 2)
def g_interp(r):
    nd = r.choice([1, 2])
    x = new_leaf(r, _spatial(r, nd, True), r.choice(FLOATS))
    modes = ["nearest", "nearest-exact", "area"] + (["linear"] if nd == 1 else ["bilinear"])
    mode = r.choice(modes)
    kw = {"mode": mode}
    if r.random() < 0.5:
        kw["size"] = r.randint(1, 7) if r.random() < 0.5 else tuple(r.randint(1, 7) for _ in range(nd))
    else:
        kw["scale_factor"] = r.choice([0.5, 1.0, 1.5, 2, 3, 0.7])
        if r.random() < 0.3:
            kw["recompute_scale_factor"] = r.random() < 0.5
    if mode in ("linear", "bilinear", "bicubic") and r.random() < 0.5:
        kw["align_corners"] = r.random() < 0.5
    return Case([x], lambda L, v: L.nn.functional.interpolate(v[0], **kw), f"F.interpolate(x, {kw})")


@op("pad", 2)
def g_pad(r):
    nd = r.choice([1, 2, 3])
    x = new_leaf(r, _spatial(r, nd, r.random() < 0.7, 1, 5), r.choice(FLOATS))
    mode = r.choice(["constant", "reflect", "replicate", "circular"])
    npad = 2 * r.randint(1, nd)
    pads = tuple(r.randint(-1, 3) for _ in range(npad))
    kw = {"mode": mode}
    if mode == "constant" and r.random() < 0.5:
        kw["value"] = r.choice([1.5, -2.0, float("nan")])
    unspecified = None
    for i in range(npad // 2):
        n = x.shape[-1 - i]
        kept = n - max(-pads[2 * i], 0) - max(-pads[2 * i + 1], 0)
        if mode == "circular" and (kept <= 0 or max(pads[2 * i], pads[2 * i + 1]) > kept):
            # torch's copies of its output onto itself overlap: uninitialised memory or an order-
            # dependent copy where it does not raise, and a wrong gradient (gradcheck fails)
            unspecified = "circular pad wider than what is kept (docs/differences.md)"
        if mode == "reflect" and n + pads[2 * i] + pads[2 * i + 1] == 0:
            # torch's reflection_pad backward of an output without elements leaves its gradient
            # uninitialised (1e36, 4.6e-41 from one call to the next; tapegrad's is zero: 60742517)
            unspecified = "reflect pad to an empty output: torch's gradient is uninitialised"
    return Case([x], lambda L, v: L.nn.functional.pad(v[0], pads, **kw), f"F.pad(x, {pads}, {kw})",
                torch_unspecified=unspecified)


@op("fold", 2)
def g_fold(r):
    k = (r.randint(1, 3), r.randint(1, 3))
    dil, pad, st = r.choice([1, 2]), r.choice([0, 1]), r.choice([1, 2])
    if r.random() < 0.5:
        x = new_leaf(r, _spatial(r, 2, r.random() < 0.8, 1, 6), r.choice(FLOATS))
        return Case([x], lambda L, v: L.nn.functional.unfold(v[0], k, dil, pad, st),
                    f"F.unfold(x, {k}, {dil}, {pad}, {st})")
    H, W = r.randint(1, 6), r.randint(1, 6)
    bh = (H + 2 * pad - dil * (k[0] - 1) - 1) // st + 1
    bw = (W + 2 * pad - dil * (k[1] - 1) - 1) // st + 1
    C = r.randint(1, 2)
    L_ = max(bh, 0) * max(bw, 0)
    if r.random() < 0.1:
        L_ += 1
    x = new_leaf(r, (r.randint(1, 2), C * k[0] * k[1], L_), r.choice(FLOATS))
    return Case([x], lambda L, v: L.nn.functional.fold(v[0], (H, W), k, dil, pad, st),
                f"F.fold(x, {(H, W)}, {k}, {dil}, {pad}, {st})")


@op("batch_norm", 2)
def g_bn(r):
    nd = r.choice([0, 1, 2])
    C = rand_dim(r, 1, 3)
    shape = (rand_dim(r, 1, 3), C) + tuple(rand_dim(r, 1, 3) for _ in range(nd))
    dt = r.choice(FLOATS)
    x = new_leaf(r, shape, dt)
    training = r.random() < 0.6
    has_rs = (not training) or r.random() < 0.6
    rm = new_leaf(r, (C,), dt, requires_grad=False, layout="c")
    rv = new_leaf(r, (C,), dt, style="positive", requires_grad=False, layout="c")
    w = new_leaf(r, (C,), dt) if r.random() < 0.6 else None
    b = new_leaf(r, (C,), dt) if r.random() < 0.6 else None
    mom, eps = r.choice([0.1, 0.5, None]), r.choice([1e-5, 0.1])
    leaves = [x, rm, rv] + [t for t in (w, b) if t]

    def call(L, v):
        it = iter(v[3:])
        ww = next(it) if w else None
        bb = next(it) if b else None
        rmv, rvv = (v[1], v[2]) if has_rs else (None, None)
        y = L.nn.functional.batch_norm(v[0], rmv, rvv, ww, bb, training, mom, eps)
        return (y, v[1].clone(), v[2].clone())
    return Case(leaves, call, f"F.batch_norm(x{shape}, running={has_rs}, w={w is not None}, "
                              f"b={b is not None}, training={training}, momentum={mom}, eps={eps})")


# (session 29) sampling and bag ops no generator drew: grid_sample / affine_grid, embedding_bag,
# ctc_loss, pixel_unshuffle / channel_shuffle, F.bilinear; seeds >= SAMPLING_FROM only
SAMPLING_FROM = 60_901_000
# (finite values: an inf meeting a zero weight or its own negative gives NaN or inf by the
# order of the kernel's sums, which is not a spec to compare against)
FINITE = ("normal", "ties", "zeros", "normal")


def int_leaf(values, shape):
    """A fixed integer input (indices, lengths) that no gradient reaches."""
    return Leaf(shape, "int64", np.asarray(values, dtype="int64").reshape(shape), "c", False)


@op("grid_sample", 2, since=SAMPLING_FROM)
def g_grid_sample(r):
    dt = r.choice(FLOATS)
    nd = r.choice([2, 2, 3])
    N, C = r.randint(1, 2), r.randint(1, 2)
    insp = tuple(r.randint(1, 4) for _ in range(nd))
    outsp = tuple(r.randint(1, 3) for _ in range(nd))
    x = new_leaf(r, (N, C) + insp, dt, style=r.choice(FINITE))
    mode = r.choice(["bilinear", "nearest"] + (["bicubic"] if nd == 2 else []))
    pm = r.choice(["zeros", "border", "reflection"])
    ac = r.random() < 0.5
    if r.random() < 0.35:
        # affine_grid's theta (N, nd, nd + 1) near the identity, the grid it makes sampled
        eye = np.concatenate([np.eye(nd), np.zeros((nd, 1))], 1)
        th = new_leaf(r, (N, nd, nd + 1), dt, style="normal", layout="c")
        th.array = (eye + 0.3 * th.array).astype(dt)
        size = (N, C) + outsp

        def call(L, v):
            F_ = L.nn.functional
            grid = F_.affine_grid(v[1], size, align_corners=ac)
            return F_.grid_sample(v[0], grid, mode=mode, padding_mode=pm, align_corners=ac), grid
        return Case([x, th], call, f"F.grid_sample(x{x.shape}, F.affine_grid(theta, {size}, "
                                   f"align_corners={ac}), {mode!r}, {pm!r}, align_corners={ac})")
    # grid coordinates in [-1.3, 1.3]: inside, on and beyond the border (never on a pixel
    # boundary of `nearest`, where the rounding tie would be the kernel's choice)
    g = new_leaf(r, (N,) + outsp + (nd,), dt, style="normal",
                 requires_grad=mode != "nearest" and r.random() < 0.85)
    g.array = np.clip(g.array * 0.7, -1.3, 1.3).astype(dt)
    return Case([x, g], lambda L, v: L.nn.functional.grid_sample(
        v[0], v[1], mode=mode, padding_mode=pm, align_corners=ac),
        f"F.grid_sample(x{x.shape}, grid{g.shape}, {mode!r}, {pm!r}, align_corners={ac})")


@op("embedding_bag", 1.5, since=SAMPLING_FROM)
def g_embedding_bag(r):
    dt = r.choice(FLOATS)
    num, dim = r.randint(1, 5), r.randint(1, 3)
    w = new_leaf(r, (num, dim), dt, style=r.choice(FINITE), layout=r.choice(["c", "T"]))
    mode = r.choice(["sum", "mean", "max"])
    kw = {"mode": mode}
    if r.random() < 0.3:
        kw["padding_idx"] = r.randrange(num)
    nr = np.random.default_rng(r.randrange(2 ** 32))
    two_d = r.random() < 0.35
    leaves = [w]
    if two_d:
        B, L_ = r.randint(1, 3), r.randint(0, 3)
        leaves.append(int_leaf(nr.integers(0, num, size=(B, L_)), (B, L_)))
        n = B * L_
    else:
        n = r.randint(0, 6)
        leaves.append(int_leaf(nr.integers(0, num, size=n), (n,)))
        bags = r.randint(1, 4)
        offs = np.sort(nr.integers(0, n + 1, size=bags))
        offs[0] = 0
        ilo = r.random() < 0.25
        if ilo:
            offs = np.append(offs, n)
            kw["include_last_offset"] = True
        leaves.append(int_leaf(offs, (len(offs),)))
    psw = mode == "sum" and r.random() < 0.4
    if psw:
        leaves.append(new_leaf(r, leaves[1].shape, dt, layout="c"))

    def call(L, v):
        F_ = L.nn.functional
        offsets = None if two_d else v[2]
        weights = v[-1] if psw else None
        return F_.embedding_bag(v[1], v[0], offsets, per_sample_weights=weights, **kw)
    return Case(leaves, call, f"F.embedding_bag(idx{leaves[1].shape}, w{w.shape}, offsets="
                              f"{None if two_d else leaves[2].array.tolist()}, psw={psw}, {kw})")


@op("ctc_loss", 1, since=SAMPLING_FROM)
def g_ctc(r):
    dt = r.choice(FLOATS)
    T, N, C = r.randint(1, 6), r.randint(1, 3), r.randint(2, 4)
    S = r.randint(0, 3)
    x = new_leaf(r, (T, N, C), dt, style="normal", layout="c")
    nr = np.random.default_rng(r.randrange(2 ** 32))
    blank = r.choice([0, C - 1])
    labels = [c for c in range(C) if c != blank]
    tgt = int_leaf(nr.choice(labels, size=(N, S)), (N, S))
    il = int_leaf(nr.integers(max(T - 2, 1), T + 1, size=N), (N,))
    tl = int_leaf(nr.integers(0, S + 1, size=N), (N,))
    red = r.choice(["mean", "sum", "none"])
    zi = r.random() < 0.5
    return Case([x, tgt, il, tl], lambda L, v: L.nn.functional.ctc_loss(
        v[0].log_softmax(2), v[1], v[2], v[3], blank=blank, reduction=red, zero_infinity=zi),
        f"F.ctc_loss(x{x.shape}.log_softmax(2), targets {tgt.array.tolist()}, {il.array.tolist()}, "
        f"{tl.array.tolist()}, blank={blank}, reduction={red!r}, zero_infinity={zi})")


@op("shuffle_bilinear", 1, since=SAMPLING_FROM)
def g_shuffle_bilinear(r):
    dt = r.choice(FLOATS)
    kind = r.choice(["pixel_unshuffle", "channel_shuffle", "bilinear"])
    if kind == "pixel_unshuffle":
        f = r.choice([1, 2])
        shape = ((r.randint(1, 2),) if r.random() < 0.7 else ()) + (r.randint(1, 2),) + (
            f * r.randint(1, 2), f * r.randint(1, 2))
        x = new_leaf(r, shape, dt)
        return Case([x], lambda L, v: L.nn.functional.pixel_unshuffle(v[0], f),
                    f"F.pixel_unshuffle(x{shape}, {f})")
    if kind == "channel_shuffle":
        g = r.choice([1, 2, 3])
        shape = (r.randint(1, 2), g * r.randint(1, 2)) + tuple(r.randint(1, 3) for _ in range(
            r.randint(0, 2)))
        x = new_leaf(r, shape, dt)
        return Case([x], lambda L, v: L.nn.functional.channel_shuffle(v[0], g),
                    f"F.channel_shuffle(x{shape}, {g})")
    batch = rand_shape(r, r.randint(0, 2), 1, 3)
    i1, i2, o = r.randint(1, 3), r.randint(1, 3), r.randint(1, 3)
    x1, x2 = (new_leaf(r, batch + (i,), dt, style=r.choice(FINITE)) for i in (i1, i2))
    w = new_leaf(r, (o, i1, i2), dt, style=r.choice(FINITE))
    b = new_leaf(r, (o,), dt) if r.random() < 0.6 else None
    return Case([x1, x2, w] + ([b] if b else []), lambda L, v: L.nn.functional.bilinear(
        v[0], v[1], v[2], v[3] if len(v) > 3 else None),
        f"F.bilinear(x1{x1.shape}, x2{x2.shape}, w{w.shape}, bias={b is not None})")


@op("dropout_eval", 0.5)
def g_dropout(r):
    nd = r.choice([1, 2])
    x = new_leaf(r, _spatial(r, nd, r.random() < 0.7), r.choice(FLOATS))
    p = r.choice([0.0, 1.0, 0.5])
    training = p in (0.0, 1.0) and r.random() < 0.7
    return Case([x], lambda L, v: getattr(L.nn.functional, f"dropout{nd}d")(v[0], p, training),
                f"F.dropout{nd}d(x, {p}, {training})")


# attention, rnn, transformer

@op("sdpa", 2)
def g_sdpa(r):
    batch = rand_shape(r, r.randint(0, 2), 1, 2)
    L_, S, E, Ev = rand_dim(r, 1, 4), rand_dim(r, 1, 4), rand_dim(r, 1, 4), rand_dim(r, 1, 3)
    dt = r.choice(FLOATS)
    q, k, v = new_leaf(r, batch + (L_, E), dt), new_leaf(r, batch + (S, E), dt), new_leaf(r, batch + (S, Ev), dt)
    kw = {}
    leaves = [q, k, v]
    mk = r.choice([None, None, "bool", "float"])
    causal = mk is None and r.random() < 0.3
    if causal:
        kw["is_causal"] = True
    if r.random() < 0.3:
        kw["scale"] = r.choice([0.5, 2.0])
    if mk:
        mshape = r.choice([(L_, S), (1, S), (L_, 1)]) if r.random() < 0.8 else batch + (L_, S)
        m = new_leaf(r, mshape, "bool" if mk == "bool" else dt, requires_grad=mk == "float" and r.random() < 0.5)
        if mk == "bool":
            # keep rows partly unmasked (a (L, 1) mask broadcasts its one column)
            m.array = m.array | (np.arange(m.array.shape[-1]) == 0)
        leaves.append(m)

    def call(Lb, vv):
        return Lb.nn.functional.scaled_dot_product_attention(
            vv[0], vv[1], vv[2], attn_mask=vv[3] if len(vv) > 3 else None, **kw)
    return Case(leaves, call, f"F.sdpa(q{q.shape}, k{k.shape}, v{v.shape}, mask={mk}, {kw})")


def module_case(r, ctor, inputs, call, desc, leaves_extra=()):
    """A module built by ctor(lib); its parameters are copied torch -> tapegrad."""
    return Case(list(inputs) + list(leaves_extra), call, desc, modules={"m": ctor})


@op("mha", 2)
def g_mha(r):
    h = r.choice([1, 2])
    E = h * r.randint(1, 3)
    bf = r.random() < 0.5
    kd = r.choice([None, None, 3])
    vd = kd if kd is None else r.choice([2, 3])
    opts = dict(bias=r.random() < 0.8, add_bias_kv=r.random() < 0.2, add_zero_attn=r.random() < 0.2,
                kdim=kd, vdim=vd, batch_first=bf)
    B, L_, S = rand_dim(r, 1, 3), rand_dim(r, 1, 3), rand_dim(r, 1, 3)
    batched = r.random() < 0.85
    dt = r.choice(FLOATS)

    def shp(T, D):
        if not batched:
            return (T, D)
        return (B, T, D) if bf else (T, B, D)
    q = new_leaf(r, shp(L_, E), dt)
    k = new_leaf(r, shp(S, kd or E), dt)
    v = new_leaf(r, shp(S, vd or E), dt)
    leaves = [q, k, v]
    kpm = None
    if r.random() < 0.3:
        kpm = new_leaf(r, (B, S) if batched else (S,), "bool", requires_grad=False)
        kpm.array[..., 0] = False
        leaves.append(kpm)
    nw = r.random() < 0.7
    avg = r.random() < 0.5
    causal_mask = r.random() < 0.2

    def ctor(L):
        return L.nn.MultiheadAttention(E, h, dtype=getattr(L, dt), **opts)

    def call(Lb, vv, mods):
        extra = {}
        if kpm is not None:
            extra["key_padding_mask"] = vv[3]
        if causal_mask:
            extra["attn_mask"] = Lb.tensor(np.triu(np.ones((L_, S), bool), 1))
        return mods["m"](vv[0], vv[1], vv[2], need_weights=nw, average_attn_weights=avg, **extra)
    return Case(leaves, call, f"nn.MultiheadAttention({E}, {h}, {opts})(q{q.shape}, k{k.shape}, "
                              f"v{v.shape}, kpm={kpm is not None}, causal={causal_mask}, need_weights={nw}, avg={avg})",
                modules={"m": ctor})


@op("rnn", 3)
def g_rnn(r):
    kind = r.choice(["RNN", "LSTM", "GRU"])
    I, H = r.randint(1, 3), r.randint(1, 3)
    opts = dict(num_layers=r.choice([1, 1, 2]), bias=r.random() < 0.8, batch_first=r.random() < 0.5,
                bidirectional=r.random() < 0.4)
    if kind == "RNN":
        opts["nonlinearity"] = r.choice(["tanh", "relu"])
    if kind == "LSTM" and r.random() < 0.25:
        opts["proj_size"] = r.randint(1, H) if H > 1 else 0
    dt = r.choice(FLOATS)
    T, B = rand_dim(r, 1, 4), rand_dim(r, 1, 3)
    batched = r.random() < 0.85
    packed = batched and r.random() < 0.3
    xs = ((B, T, I) if opts["batch_first"] else (T, B, I)) if batched else (T, I)
    x = new_leaf(r, xs, dt)
    leaves = [x]
    D = 2 if opts["bidirectional"] else 1
    hout = opts.get("proj_size") or H
    give_h = r.random() < 0.4
    if give_h:
        hs = (D * opts["num_layers"],) + ((B,) if batched else ())
        leaves.append(new_leaf(r, hs + (hout,), dt))
        if kind == "LSTM":
            leaves.append(new_leaf(r, hs + (H,), dt))
    lengths = sorted([r.randint(1, T) for _ in range(B)], reverse=True)
    enforce = r.random() < 0.5
    if not enforce:
        r.shuffle(lengths)

    def ctor(L):
        return getattr(L.nn, kind)(I, H, dtype=getattr(L, dt), **opts)

    def call(Lb, vv, mods):
        h0 = None
        if give_h:
            h0 = (vv[1], vv[2]) if kind == "LSTM" else vv[1]
        inp = vv[0]
        if packed:
            inp = Lb.nn.utils.rnn.pack_padded_sequence(inp, Lb.tensor(lengths), opts["batch_first"],
                                                      enforce_sorted=enforce)
        out, hn = mods["m"](inp, h0)
        if packed:
            out, lens = Lb.nn.utils.rnn.pad_packed_sequence(out, opts["batch_first"])
            return out, hn, lens
        return out, hn
    return Case(leaves, call, f"nn.{kind}({I}, {H}, {opts})(x{xs}, h0={give_h}, packed={packed} "
                              f"lengths={lengths}, enforce_sorted={enforce})", modules={"m": ctor})


@op("rnn_cell", 1)
def g_cell(r):
    kind = r.choice(["RNNCell", "LSTMCell", "GRUCell"])
    I, H = r.randint(1, 3), r.randint(1, 3)
    bias = r.random() < 0.8
    dt = r.choice(FLOATS)
    batched = r.random() < 0.8
    B = rand_dim(r, 0, 3)
    x = new_leaf(r, (B, I) if batched else (I,), dt)
    leaves = [x]
    give_h = r.random() < 0.5
    if give_h:
        leaves.append(new_leaf(r, (B, H) if batched else (H,), dt))
        if kind == "LSTMCell":
            leaves.append(new_leaf(r, (B, H) if batched else (H,), dt))

    def ctor(L):
        return getattr(L.nn, kind)(I, H, bias, dtype=getattr(L, dt))

    def call(Lb, vv, mods):
        h0 = None
        if give_h:
            h0 = (vv[1], vv[2]) if kind == "LSTMCell" else vv[1]
        return mods["m"](vv[0], h0)
    return Case(leaves, call, f"nn.{kind}({I}, {H}, {bias})(x{x.shape}, h0={give_h})", modules={"m": ctor})


@op("transformer", 1.5)
def g_transformer(r):
    h = r.choice([1, 2])
    d = h * r.randint(1, 2)
    bf, nf = r.random() < 0.5, r.random() < 0.5
    act = r.choice(["relu", "gelu"])
    ff = r.randint(1, 4)
    dec = r.random() < 0.35
    B, S, T = rand_dim(r, 1, 2), rand_dim(r, 1, 3), rand_dim(r, 1, 3)
    dt = r.choice(FLOATS)
    x = new_leaf(r, (B, S, d) if bf else (S, B, d), dt)
    mem = new_leaf(r, (B, T, d) if bf else (T, B, d), dt)
    causal = r.random() < 0.4
    n_layers = r.choice([1, 2])

    def ctor(L):
        cls = L.nn.TransformerDecoderLayer if dec else L.nn.TransformerEncoderLayer
        layer = cls(d, h, ff, 0.0, act, batch_first=bf, norm_first=nf, dtype=getattr(L, dt))
        if dec:
            return layer
        return L.nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)

    def call(Lb, vv, mods):
        mask = Lb.nn.Transformer.generate_square_subsequent_mask(S, dtype=getattr(Lb, dt)) if causal else None
        if dec:
            return mods["m"](vv[0], vv[1], tgt_mask=mask)
        return mods["m"](vv[0], mask=mask)
    return Case([x, mem] if dec else [x], call,
                f"{'Decoder' if dec else 'Encoder'}Layer(d={d}, h={h}, ff={ff}, act={act}, bf={bf}, "
                f"norm_first={nf}, layers={n_layers})(x{x.shape}, causal={causal})", modules={"m": ctor})


@op("rnn_utils", 1)
def g_rnn_utils(r):
    n = r.randint(1, 3)
    trail = rand_shape(r, r.randint(0, 1), 1, 3)
    dt = r.choice(FLOATS)
    seqs = [new_leaf(r, (rand_dim(r, 0 if r.random() < 0.2 else 1, 4),) + trail, dt) for _ in range(n)]
    bf = r.random() < 0.5
    pv = r.choice([0.0, -1.5])
    if r.random() < 0.5:
        return Case(seqs, lambda L, v: L.nn.utils.rnn.pad_sequence(list(v), bf, pv),
                    f"pad_sequence(seqs{[s.shape for s in seqs]}, {bf}, {pv})")
    enf = r.random() < 0.5

    def call(L, v):
        p = L.nn.utils.rnn.pack_sequence(list(v), enforce_sorted=enf)
        out, lens = L.nn.utils.rnn.pad_packed_sequence(p, bf, pv)
        return p.data, p.batch_sizes, out, lens
    return Case(seqs, call, f"pack_sequence(seqs{[s.shape for s in seqs]}, enforce_sorted={enf}) -> pad_packed")


# distributions, random, devices

@op("distributions", 2)
def g_dist(r):
    kind = r.choice(["Normal", "Bernoulli", "Categorical", "Uniform", "OneHotCategorical", "kl"])
    dt = r.choice(FLOATS)
    bshape = rand_shape(r, r.randint(0, 2), 1, 3)
    va = r.random() < 0.3
    method = r.choice(["log_prob", "entropy", "mean", "variance", "stddev", "cdf", "icdf"])
    if kind == "Normal":
        loc = new_leaf(r, bshape, dt)
        scale = new_leaf(r, bshape, dt, style="positive" if r.random() < 0.9 else "normal")
        val = new_leaf(r, bshape, dt, requires_grad=False)
        if method == "icdf":
            val.array = np.abs(val.array) % 1.0

        def call(L, v):
            d = L.distributions.Normal(v[0], v[1], validate_args=va)
            if method in ("log_prob", "cdf", "icdf"):
                return getattr(d, method)(v[2])
            if method == "entropy":
                return d.entropy()
            return getattr(d, method)
        return Case([loc, scale, val], call, f"Normal(loc, scale, validate_args={va}).{method}")
    if kind == "Uniform":
        lo = new_leaf(r, bshape, dt, layout="c")
        hi = new_leaf(r, bshape, dt, layout="c")
        hi.array = (lo.array + np.abs(hi.array) + 0.1).astype(dt) if r.random() < 0.9 else hi.array
        val = new_leaf(r, bshape, dt, requires_grad=False)

        def call(L, v):
            d = L.distributions.Uniform(v[0], v[1], validate_args=va)
            if method in ("log_prob", "cdf", "icdf"):
                return getattr(d, method)(v[2])
            if method == "entropy":
                return d.entropy()
            return getattr(d, method)
        return Case([lo, hi, val], call, f"Uniform(lo, hi, validate_args={va}).{method}")
    if kind == "Bernoulli":
        use_logits = r.random() < 0.5
        p = new_leaf(r, bshape, dt)
        if not use_logits:
            p.array = (1 / (1 + np.exp(-p.array))).astype(dt)
        val = new_leaf(r, bshape, dt, requires_grad=False)
        val.array = (val.array > 0).astype(dt)
        m = r.choice(["log_prob", "entropy", "mean", "variance", "probs", "logits"])

        def call(L, v):
            d = L.distributions.Bernoulli(**{("logits" if use_logits else "probs"): v[0]}, validate_args=va)
            if m == "log_prob":
                return d.log_prob(v[1])
            if m == "entropy":
                return d.entropy()
            return getattr(d, m)
        return Case([p, val], call, f"Bernoulli({'logits' if use_logits else 'probs'}, validate_args={va}).{m}")
    if kind in ("Categorical", "OneHotCategorical"):
        K = rand_dim(r, 1, 4)
        use_logits = r.random() < 0.5
        p = new_leaf(r, bshape + (K,), dt, style="normal" if use_logits else "positive")
        m = r.choice(["log_prob", "entropy", "probs", "logits", "mean", "variance"] if kind != "Categorical" else ["log_prob", "entropy", "probs", "logits"])
        idx = new_leaf(r, bshape, "int64", requires_grad=False)
        idx.array = np.abs(idx.array) % K

        def call(L, v):
            cls = getattr(L.distributions, kind)
            d = cls(**{("logits" if use_logits else "probs"): v[0]}, validate_args=va)
            if m == "log_prob":
                val = v[1] if kind == "Categorical" else L.nn.functional.one_hot(v[1], K).to(v[0].dtype)
                return d.log_prob(val)
            if m == "entropy":
                return d.entropy()
            return getattr(d, m)
        return Case([p, idx], call, f"{kind}({'logits' if use_logits else 'probs'}{p.shape}).{m}")
    # kl
    pair = r.choice(["Normal", "Bernoulli", "Categorical", "Uniform"])
    if pair == "Normal":
        a, b, c, d_ = (new_leaf(r, bshape, dt, style=s) for s in ("normal", "positive", "normal", "positive"))

        def call(L, v):
            D = L.distributions
            return D.kl_divergence(D.Normal(v[0], v[1]), D.Normal(v[2], v[3]))
        return Case([a, b, c, d_], call, "kl(Normal, Normal)")
    if pair == "Uniform":
        a = new_leaf(r, bshape, dt, layout="c")
        b = new_leaf(r, bshape, dt, layout="c")
        b.array = (a.array + np.abs(b.array) + 0.1).astype(dt)
        c = new_leaf(r, bshape, dt, layout="c")
        d_ = new_leaf(r, bshape, dt, layout="c")
        d_.array = (c.array + np.abs(d_.array) + 0.1).astype(dt)

        def call(L, v):
            D = L.distributions
            return D.kl_divergence(D.Uniform(v[0], v[1]), D.Uniform(v[2], v[3]))
        return Case([a, b, c, d_], call, "kl(Uniform, Uniform)")
    K = rand_dim(r, 1, 4)
    a = new_leaf(r, bshape + ((K,) if pair == "Categorical" else ()), dt)
    b = new_leaf(r, bshape + ((K,) if pair == "Categorical" else ()), dt)

    def call(L, v):
        D = L.distributions
        cls = getattr(D, pair)
        return D.kl_divergence(cls(logits=v[0]), cls(logits=v[1]))
    return Case([a, b], call, f"kl({pair}(logits), {pair}(logits))")


@op("to_legacy", 1)
def g_to(r):
    x = new_leaf(r, rand_shape(r, r.randint(0, 3)), r.choice(FLOATS + ("int64", "bool")))
    kind = r.choice(["to", "to_other", "double", "float", "type", "legacy", "new"])
    target = r.choice(["float32", "float64", "int64", "bool", "int32"])
    if kind == "to":
        cp = r.random() < 0.3
        return Case([x], lambda L, v: v[0].to(getattr(L, target), copy=cp), f"x.to({target}, copy={cp})")
    if kind == "to_other":
        o = new_leaf(r, (2,), target if target != "int32" else "int64", requires_grad=False)
        return Case([x, o], lambda L, v: v[0].to(v[1]), f"x.to(other {o.dtype})")
    if kind in ("double", "float"):
        return Case([x], lambda L, v: getattr(v[0], kind)(), f"x.{kind}()")
    if kind == "type":
        return Case([x], lambda L, v: v[0].type(getattr(L, target)), f"x.type({target})")
    if kind == "legacy":
        cls = r.choice(["FloatTensor", "DoubleTensor", "LongTensor"])
        return Case([x], lambda L, v: getattr(L, cls)(v[0].detach().tolist()) if v[0].dim()
                    else tuple(getattr(L, cls)(3).shape),
                    f"torch.{cls}(x.tolist())")
    m = r.choice(["new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"])
    shp = rand_shape(r, r.randint(0, 2))
    if m == "new_full":
        return Case([x], lambda L, v: v[0].new_full(shp, 2.5), f"x.new_full({shp}, 2.5)")
    if m == "new_tensor":
        return Case([x], lambda L, v: v[0].new_tensor([1, 2]), "x.new_tensor([1, 2])")
    if m == "new_empty":
        return Case([x], lambda L, v: v[0].new_empty(shp).shape, f"x.new_empty({shp}).shape")
    return Case([x], lambda L, v: getattr(v[0], m)(shp), f"x.{m}({shp})")


@op("random_shapes", 0.5)
def g_random(r):
    kind = r.choice(["rand", "randn", "randint", "randperm", "normal", "multinomial", "bernoulli", "rand_like"])
    shp = rand_shape(r, r.randint(0, 3))
    dt = r.choice([None, "float64", "float32", "int64"])
    kw = {} if dt is None else {"dtype": dt}

    def meta(t):
        return (tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad)
    if kind in ("rand", "randn"):
        return Case([], lambda L, v: meta(getattr(L, kind)(*shp, **{k: getattr(L, x) for k, x in kw.items()})),
                    f"torch.{kind}(*{shp}, {kw})")
    if kind == "randint":
        hi = r.choice([1, 5, 0])
        return Case([], lambda L, v: meta(L.randint(hi, shp)), f"torch.randint({hi}, {shp})")
    if kind == "randperm":
        n = r.choice([0, 1, 5, -1])
        return Case([], lambda L, v: meta(L.randperm(n)), f"torch.randperm({n})")
    if kind == "normal":
        m = new_leaf(r, shp, r.choice(FLOATS))
        s = new_leaf(r, shp, m.dtype, style="positive")
        return Case([m, s], lambda L, v: meta(L.normal(v[0], v[1])), "torch.normal(m, s)")
    if kind == "multinomial":
        p = new_leaf(r, rand_shape(r, r.choice([1, 2]), 1, 4), r.choice(FLOATS), style="positive", requires_grad=False)
        ns, rep = r.randint(0, 5), r.random() < 0.5
        return Case([p], lambda L, v: meta(L.multinomial(v[0], ns, rep)), f"torch.multinomial(p{p.shape}, {ns}, {rep})")
    if kind == "bernoulli":
        p = new_leaf(r, shp, r.choice(FLOATS), requires_grad=False)
        p.array = np.abs(p.array) % 1.0 if r.random() < 0.9 else p.array
        return Case([p], lambda L, v: meta(L.bernoulli(v[0])), "torch.bernoulli(p)")
    x = new_leaf(r, shp, r.choice(FLOATS + ("int64",)))
    return Case([x], lambda L, v: meta(L.rand_like(v[0])), "torch.rand_like(x)")


# -- chain ops (applied to the first float output) ------------------------------------------------

def chain_step(r, shape):
    nd = len(shape)
    d = rdim(r, nd, 0)
    choices = [
        (f"flip({d})", lambda L, t: L.flip(t, (d,))),
        (f"roll(1, {d})", lambda L, t: L.roll(t, 1, d)),
        (f"cumsum({d})", lambda L, t: L.cumsum(t, d)),
        (f"cumprod({d})", lambda L, t: L.cumprod(t, d)),
        (f"sort({d}).values", lambda L, t: L.sort(t, dim=d, stable=True).values),
        ("log2(abs+1)", lambda L, t: L.log2(t.abs() + 1)),
        ("tanh", lambda L, t: t.tanh()),
        ("sum", lambda L, t: t.sum()),
        (f"sum({d},keepdim)", lambda L, t: t.sum(d, keepdim=True)),
        ("x*x", lambda L, t: t * t),
        ("exp(-x*x)", lambda L, t: (-(t * t)).exp()),
        ("einsum('...->...')", lambda L, t: L.einsum("...->...", t)),
        (f"t[::2]", lambda L, t: t[::2] if t.dim() else t),
        ("mT", lambda L, t: t.transpose(-1, -2) if t.dim() >= 2 else t),
        ("contiguous", lambda L, t: t.contiguous()),
        (f"max({d})", lambda L, t: t.max(d).values if t.numel() else t),
    ]
    if nd == 2:
        choices += [("diag", lambda L, t: L.diag(t)), ("trace", lambda L, t: L.trace(t)),
                    ("t@t.T", lambda L, t: t @ t.transpose(0, 1))]
    if nd == 1:
        choices += [("diag", lambda L, t: L.diag(t))]
    if nd in (3, 4):
        choices += [("avg_pool", lambda L, t: getattr(L.nn.functional, f"avg_pool{nd - 2}d")(t, 1)),
                    ("interp_nearest", lambda L, t: L.nn.functional.interpolate(t, scale_factor=2))]
    return r.choice(choices)


# -- running a program ------------------------------------------------------------------------------

class Program:
    def __init__(self, seed, op_filter=None):
        r = random.Random(seed)
        self.seed = seed
        names = [n for n in OPS if (op_filter is None or n in op_filter) and seed >= OPS[n][2]]
        weights = [OPS[n][1] for n in names]
        self.op = r.choices(names, weights)[0]
        self.case = OPS[self.op][0](r)
        self.mode = r.choices(["grad", "grad2", "inplace", "no_grad", "compile", "plain"],
                              [5, 2, 1.5, 1, 1.5, 1])[0]
        self.chain_seed = r.randrange(2 ** 32)
        self.chain_names = []           # filled while running (the same steps in both libraries)
        self.n_chain = r.choices([0, 1, 2], [5, 3, 1])[0]
        if self.case.unordered:         # (a chain would read the unspecified order: 62601875)
            self.n_chain = 0
        self.weight_seed = r.randrange(2 ** 32)
        self.inplace_kind = r.choice(["add_", "mul_"])
        self.inplace_target = r.choice(["output", "input"])

    def describe(self):
        lines = [f"seed {self.seed}: op={self.op} mode={self.mode} chain={self.n_chain}",
                 "  " + self.case.desc]
        lines += ["  " + leaf.describe() for leaf in self.case.leaves]
        if self.mode == "inplace":
            lines.append(f"  inplace: {self.inplace_kind} on {self.inplace_target}")
        return "\n".join(lines)


def flatten(obj):
    """Outputs as a flat list of tensors and plain values."""
    if isinstance(obj, (tuple, list)):
        out = []
        for o in obj:
            out += flatten(o)
        return out
    if hasattr(obj, "batch_sizes") and hasattr(obj, "data") and not hasattr(obj, "dim"):
        return flatten((obj.data, obj.batch_sizes, obj.sorted_indices, obj.unsorted_indices))
    return [obj]


def is_tensor(x):
    return hasattr(x, "dim") and hasattr(x, "dtype") and hasattr(x, "requires_grad")


def to_np(t):
    return np.array(t.detach().tolist() if False else t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy())


def err_kind(e):
    for cls in type(e).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(e).__name__


class Outcome:
    def __init__(self):
        self.error = None           # (stage, kind, message)
        self.outputs = None
        self.grads = None
        self.grads2 = None
        self.extra = {}


# The worker's progress file (tools/fuzz.py): the seed it runs and which library runs it, so a
# process that dies is attributed to torch or to tapegrad.
PROGRESS = {"path": None, "seed": None}


def mark_phase(L):
    """Record in the progress file that library L starts running the current seed."""
    if PROGRESS["path"] is not None:
        with open(PROGRESS["path"], "w") as f:
            f.write(f"{PROGRESS['seed']} {L.__name__}")


def run_program(L, prog, torch_modules=None):
    mark_phase(L)
    """Run `prog` with library L; returns an Outcome (and the modules' state, for copying)."""
    case = prog.case
    res = Outcome()
    stage = "build"
    try:
        built = [build_leaf(L, leaf) for leaf in case.leaves]
        bases = [b for b, _ in built]
        views = [v for _, v in built]
        mods = {}
        params = []
        if case.modules:
            for name, ctor in case.modules.items():
                m = ctor(L)
                if torch_modules is not None:
                    sd = {k: L.tensor(np.array(v)) for k, v in torch_modules[name].items()}
                    m.load_state_dict(sd)
                mods[name] = m
                params += [p for _, p in m.named_parameters()]
        res.extra["state"] = {name: {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
                              for name, m in mods.items()}
        leaves = [b for b, leaf in zip(bases, case.leaves) if leaf.requires_grad] + params

        def fn(*vs):
            out = case.call(L, list(vs), mods) if case.modules else case.call(L, list(vs))
            outs = flatten(out)
            cr = random.Random(prog.chain_seed)
            for _ in range(prog.n_chain):
                idx = next((i for i, o in enumerate(outs) if is_tensor(o) and o.is_floating_point()), None)
                if idx is None:
                    break
                name, f = chain_step(cr, tuple(outs[idx].shape))
                res.extra.setdefault("chain", []).append(f"{name} of output {idx}")
                prog.chain_names.append(name)
                outs = outs + [f(L, outs[idx])]
            return outs

        stage = "forward"
        if prog.mode == "no_grad":
            with L.no_grad():
                outs = fn(*views)
        elif prog.mode == "compile":
            if L.__name__ == "torch":
                outs = fn(*views)
                outs2 = fn(*views)
            else:
                cf = L.compile(fn)
                outs = cf(*views)
                stage = "compile-second-call"
                outs2 = cf(*views)
            res.extra["second"] = [to_np(o) if is_tensor(o) else o for o in outs2]
        else:
            outs = fn(*views)
        res.outputs = [(to_np(o), str(o.dtype).split(".")[-1], tuple(o.shape), o.requires_grad)
                       if is_tensor(o) else ("py", o) for o in outs]
        if prog.mode in ("plain", "no_grad"):
            return res
        diff = [o for o in outs if is_tensor(o) and o.requires_grad and o.is_floating_point()]
        if not diff:
            return res
        if prog.mode == "inplace":
            stage = "inplace"
            tgt = diff[0]
            if prog.inplace_target == "input":
                cand = [v for v, leaf in zip(views, case.leaves) if leaf.requires_grad]
                tgt = cand[0] if cand else tgt
                if tgt is not diff[0] and tgt.is_leaf:
                    return res
            if prog.inplace_kind == "add_":
                tgt.add_(1.0)
            elif prog.inplace_kind == "mul_":
                tgt.mul_(2.0)
            else:
                if tgt.dim() and tgt.numel():
                    tgt.view(-1)[0:1].add_(1.0) if tgt.is_contiguous() else tgt.add_(1.0)
                else:
                    tgt.add_(1.0)
        stage = "backward"
        wr = np.random.default_rng(prog.weight_seed)
        total = None
        for o in diff:
            w = L.tensor(wr.standard_normal(tuple(o.shape)).astype(to_np(o).dtype))
            term = (o * w).sum()
            total = term if total is None else total + term
        if not leaves:
            return res
        cg = prog.mode == "grad2"
        gs = L.autograd.grad(total, leaves, allow_unused=True, create_graph=cg)
        res.grads = [None if g is None else to_np(g) for g in gs]
        if cg:
            stage = "double-backward"
            pairs = [(j, g) for j, g in enumerate(gs) if g is not None and g.requires_grad]
            if pairs:
                s = None
                for j, g in pairs:
                    # weights per leaf index: the same whichever leaves have a first gradient
                    wj = np.random.default_rng([prog.weight_seed, j])
                    w = L.tensor(wj.standard_normal(tuple(g.shape)).astype(to_np(g).dtype))
                    t = (g * w).sum()
                    s = t if s is None else s + t
                g2 = L.autograd.grad(s, leaves, allow_unused=True)
                res.grads2 = [None if g is None else to_np(g) for g in g2]
    except Exception as e:  # noqa: BLE001 - every exception is data here
        res.error = (stage, err_kind(e), f"{type(e).__name__}: {str(e)[:300]}")
        res.extra["tb"] = traceback.format_exc()
    return res


def tolerances(dt):
    return (2e-4, 2e-5) if dt in ("float32", np.float32) or str(dt) == "float32" else (1e-7, 1e-9)


def close(a, b, rtol, atol, equal_nan=True):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return np.array_equal(a, b)
    if a.size == 0:
        return True
    scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(b), b, 0)))) if b.size else 1.0)
    return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol * scale,
                       equal_nan=equal_nan)


def compare(prog, t_res, g_res):
    """Findings: list of (category, message)."""
    out = []
    te, ge = t_res.error, g_res.error
    order = ["build", "forward", "compile-second-call", "inplace", "backward", "double-backward"]
    if te and ge and te[0] != ge[0]:
        # raised at different stages: the earlier one is a missing / spurious error
        if order.index(te[0]) < order.index(ge[0]):
            out.append(("missing-error", f"torch raised at {te[0]} {te[2]!r}; tapegrad did not "
                                         f"(it raised later, at {ge[0]}: {ge[2]!r})"))
        else:
            out.append(("crash" if ge[0] in ("forward", "build") else "spurious-error",
                        f"tapegrad raised at {ge[0]}: {ge[2]!r}; torch did not (it raised later, "
                        f"at {te[0]}: {te[2]!r})"))
        return out
    if te or ge:
        if te and ge:
            if te[1] != ge[1] or te[0] != ge[0]:
                out.append(("exception-type", f"torch {te[0]} {te[2]!r} vs tapegrad {ge[0]} {ge[2]!r}"))
            return out
        if ge:
            if t_res.outputs is None or ge[0] in ("forward", "build", "compile-second-call"):
                out.append(("crash" if ge[0] != "backward" else "crash-backward",
                            f"tapegrad raised at {ge[0]}: {ge[2]!r}; torch did not"))
                return out
            out.append(("spurious-error", f"tapegrad raised at {ge[0]}: {ge[2]!r}; torch did not"))
            return out
        if g_res.outputs is None or te[0] in ("forward", "build"):
            out.append(("missing-error", f"torch raised at {te[0]} {te[2]!r}; tapegrad did not"))
            return out
        out.append(("missing-error", f"torch raised at {te[0]} {te[2]!r}; tapegrad did not"))
    to, go = t_res.outputs, g_res.outputs
    if to is None or go is None:
        return out
    if len(to) != len(go):
        out.append(("structure", f"{len(to)} outputs vs {len(go)}"))
        return out
    for i, (a, b) in enumerate(zip(to, go)):
        a_py, b_py = isinstance(a[0], str), isinstance(b[0], str)
        if a_py or b_py:
            if a_py != b_py:
                out.append(("structure", f"output {i}: torch {type(a[1]).__name__} vs tapegrad {type(b[1]).__name__}"))
            elif not (a[1] == b[1] or (isinstance(a[1], float) and isinstance(b[1], float)
                                      and math.isclose(a[1], b[1], rel_tol=1e-5, abs_tol=1e-7))):
                out.append(("value", f"output {i}: torch {a[1]!r} vs tapegrad {b[1]!r}"))
            continue
        tv, tdt, tsh, trg = a
        gv, gdt, gsh, grg = b
        if tdt != gdt:
            out.append(("dtype", f"output {i}: torch {tdt} vs tapegrad {gdt}"))
        if tsh != gsh:
            out.append(("shape", f"output {i}: torch {tsh} vs tapegrad {gsh}"))
            continue
        if trg != grg:
            out.append(("requires_grad", f"output {i}: torch {trg} vs tapegrad {grg}"))
        if prog.case.skip_indices and tv.dtype.kind in "iu":
            continue
        rtol, atol = tolerances(tdt)
        tv2, gv2 = tv, gv
        if prog.case.unordered and tv.ndim:
            tv2, gv2 = np.sort(tv, axis=None), np.sort(gv, axis=None)
        if not close(gv2, tv2, rtol, atol):
            out.append(("value", f"output {i} ({tdt}{tsh}): max|diff| "
                                 f"{_maxdiff(gv2, tv2)}; torch {_short(tv2)} vs tapegrad {_short(gv2)}"))
    if "second" in t_res.extra and "second" in g_res.extra:
        for i, (a, b) in enumerate(zip(t_res.extra["second"], g_res.extra["second"])):
            if prog.case.skip_indices and isinstance(a, np.ndarray) and a.dtype.kind in "iu":
                continue
            b = np.asarray(b)
            if prog.case.unordered and isinstance(a, np.ndarray) and a.ndim and a.shape == b.shape:
                a, b = np.sort(a, axis=None), np.sort(b, axis=None)
            if isinstance(a, np.ndarray) and not close(b, a, *tolerances(a.dtype)):
                out.append(("compile", f"second (compiled) call output {i} differs: "
                                       f"torch {_short(a)} vs tapegrad {_short(b)}"))
    if prog.case.unordered or prog.case.no_grad_check:
        return out
    t2, g2 = t_res.grads2, g_res.grads2
    if prog.mode == "grad2" and t_res.grads is not None and g_res.grads is not None:
        # no first gradient that requires grad on one side: its second derivatives are zeros
        n = len(t_res.grads)
        t2 = t2 if t2 is not None else [None] * n
        g2 = g2 if g2 is not None else [None] * n
    if te or ge:
        t2 = g2 = None          # a side raised in (or before) the double backward
    for label, tg_, gg_ in (("grad", t_res.grads, g_res.grads), ("grad2", t2, g2)):
        if tg_ is None or gg_ is None:
            if (tg_ is None) != (gg_ is None) and not (te or ge):
                out.append((label, f"torch has {'no' if tg_ is None else ''} {label}, tapegrad "
                                   f"{'no' if gg_ is None else 'has'}"))
            continue
        for j, (a, b) in enumerate(zip(tg_, gg_)):
            if a is None and b is None:
                continue
            if a is None or b is None:
                # None vs zeros is a legitimate difference (allow_unused): only flag nonzero.
                z = b if a is None else a
                if np.any(z != 0):
                    out.append((label, f"leaf {j}: torch {'None' if a is None else _short(a)} vs "
                                       f"tapegrad {'None' if b is None else _short(b)}"))
                continue
            rtol, atol = tolerances(a.dtype)
            if prog.case.grad_tol:
                rtol, atol = prog.case.grad_tol
            if a.dtype != b.dtype:
                out.append((label, f"leaf {j}: dtype torch {a.dtype} vs tapegrad {b.dtype}"))
            if not close(b, a, rtol * 10, atol * 10):
                out.append((label, f"leaf {j} {a.shape}: max|diff| {_maxdiff(b, a)}; torch "
                                   f"{_short(a)} vs tapegrad {_short(b)}"))
    return out


# Differences triaged as deliberate, torch-side, or known core issues (see the report in the
# commit history): `known(...)` tells them apart so that a run shows what is new.
KNOWN = [
    # torch cannot double-backward embedding_bag (its backward kernels have no derivative);
    # tapegrad's is a composite of differentiable ops (60901224, 60901307)
    ("missing-error", "the derivative for '_embedding_bag_backward' is not implemented"),
    ("missing-error", "derivative for aten::_embedding_bag_per_sample_weights_backward is not "
                      "implemented"),
    # torch cannot double-backward its CPU flash attention; tapegrad can
    ("missing-error", "_scaled_dot_product_flash_attention_for_cpu_backward is not implemented"),
    # torch's own batch_norm double-backward bug
    ("missing-error", "Expected a proper Tensor but got None"),
    # core limitation: no in-place on a view of a tensor that requires grad (loud, not silent)
    ("spurious-error", "in-place operations on a view of a tensor that requires grad"),
    ("spurious-error", "a leaf Variable that requires grad is being used in an in-place"),
    # torch marks bincount(weights)/unique outputs as requiring grad and fails in backward;
    # tapegrad returns constants
    ("missing-error", "derivative for aten::bincount is not implemented"),
    ("missing-error", "the derivative for '_unique2' is not implemented"),
    ("missing-error", "the derivative for 'unique_dim' is not implemented"),
    # torch saved a value tapegrad's backward does not need: torch's version check fires, the
    # tapegrad gradient is still right
    ("missing-error", "torch raised at backward 'RuntimeError: one of the variables needed"),
]


def known(prog, cat, msg):
    import re
    if any(c == cat and re.search(re.escape(m), msg) for c, m in KNOWN):
        return True
    if cat == "requires_grad" and prog.op in ("unique", "hist"):
        return True
    if (cat == "missing-error" and prog.op == "einsum"
            and re.search(r"expected scalar type \w+ but found \w+", msg)):
        # torch's quirk (docs/differences.md, session 24): einsum of mixed dtypes refuses them
        # only on some paths (an operand without elements: 60734241, 60737255, 60742681);
        # tapegrad promotes, as torch's other paths do
        return True
    if (cat == "dtype" and prog.op == "einsum"
            and len({leaf.array.dtype for leaf in prog.case.leaves}) > 1
            and any(0 in leaf.shape for leaf in prog.case.leaves)):
        # the same quirk: with an operand without elements torch's einsum of float32 and
        # float64 operands returns float32 in either order (surface 60776857); tapegrad promotes
        return True
    if (cat == "value" and prog.op == "einsum"
            and len({leaf.array.dtype for leaf in prog.case.leaves}) > 1
            and re.search(r"max\|diff\| \d(\.\d+)?e-(0[6-9]|[1-9]\d);", msg)):
        # the same quirk's rounding: torch's einsum sums a float32 operand over the dims only it
        # has in float32 before promoting to the float64 of the other (einsum('...,a...bd->a',
        # float64 0-d, float32 (3, 3, 3)) is x.sum((1, 2)).double() * s exactly, 2e-8 from
        # the float64 sum; surface 60783178); tapegrad promotes first
        return True
    if prog.case.torch_unspecified and cat not in ("process-crash", "fuzzer-error"):
        return True
    # CORE BUG (src/): a view taken before an in-place write to its base keeps its old history,
    # so its gradient misses the write (torch rebases the view).  Filtered only where the chain
    # took a view of an output that the in-place step then modified.
    views = {"t[::2]", "mT", "einsum('...->...')"}
    if prog.mode == "inplace" and cat in ("grad", "grad2") and views & set(prog.chain_names):
        return True
    # CORE BUG (src/): softmax's create_graph VJP gives a zero derivative with respect to the
    # incoming gradient where that gradient is NaN/inf (torch: the finite y*u - y*sum(u*y)); it
    # shows in attention's second derivatives when an input holds NaN/inf
    if cat == "grad2" and prog.op in ("mha", "sdpa", "transformer") and any(
            leaf.array.dtype.kind == "f" and not np.isfinite(leaf.array).all()
            for leaf in prog.case.leaves):
        return True
    # torch's CPU attention kernel (MultiheadAttention with need_weights=False takes it) gives
    # a query row holding NaN an output row of zeros and gradients without NaN; the softmax of
    # a NaN score is NaN, which tapegrad propagates (session 23's "NaN rows", 60727913; session
    # 24: 60732951, 60735217, 60736789, 60738109, 60738124); F.scaled_dot_product_attention the
    # same: its flash kernel (is_causal, no mask) never reads a key the mask hides, so a NaN there
    # leaves the rows finite, where the math kernel's additive -inf (tapegrad's) keeps the NaN
    # (session 25: 60758574; 60758836 with a float mask and non-finite keys and values); and for
    # gradients, a row whose scores are all -inf has probabilities 0 in torch's kernel (output
    # zeros, as tapegrad's), but its backward multiplies them by a dP holding the inf of v
    # (0 * inf: NaN), where tapegrad's gradient of that row is 0 (60739464); compiled calls
    # compared with torch's the same (61001226: an inf in a query row)
    if cat in ("value", "grad", "compile") and prog.op in ("mha", "sdpa") and any(
            leaf.array.dtype.kind == "f" and not np.isfinite(leaf.array).all()
            for leaf in prog.case.leaves):
        return True
    # torch's CPU batch_norm backward misreads a non-contiguous weight when each channel has one
    # element per sample (input (N, C) or (N, C, 1, ...)): torch.autograd.gradcheck fails there;
    # tapegrad's input gradient equals torch's with the weight made contiguous (seed 60607292,
    # tests/test_nn_layers.py); its double backward with a strided weight fails gradgradcheck at
    # any spatial size (seed 60607725: NaN where tapegrad is finite)
    if prog.op == "batch_norm" and cat in ("grad", "grad2") and "w=True" in prog.case.desc and \
            prog.case.leaves[3].layout != "c" and (
                cat == "grad2" or int(np.prod(prog.case.leaves[0].shape[2:])) == 1):
        return True
    # torch's transposed convolution to an output size 0: its oneDNN path (float32 with a batch
    # or groups above 1, more than one thread) returns an empty output (and fails to build a
    # memory descriptor for a negative size); its native path raises, as tapegrad always does
    if cat == "crash" and prog.op == "conv" and "conv_transpose" in prog.case.desc and \
            "Output size is too small" in msg:
        return True
    # degenerate, and torch's own result depends on its kernel: a convolution's weight gradient
    # where an infinite input or gradient meets the padding's zeros is NaN on torch's batch-1
    # path (as tapegrad's always: 0 * inf) and skips the padding on its oneDNN path for a batch
    # above 1 (conv_transpose1d(inf, w, stride=2, padding=1): w.grad [nan, inf, nan] for one
    # sample, [0, inf, 0] for two; conv1d's alike; surface 60775031)
    if prog.op == "conv" and cat in ("grad", "grad2") and any(
            leaf.array.dtype.kind == "f" and not np.isfinite(leaf.array).all()
            for leaf in prog.case.leaves):
        return True
    # torch's addmv with an empty matrix returns beta * input unbroadcast (addmv(ones(1),
    # ones(2, 0), ones(0)) has shape (1,), with a resize warning) and its backward then fails;
    # tapegrad broadcasts to the product's shape (seed 60613049)
    if prog.op == "addmm" and re.match(r"torch\.addmv\(a\([^)]*\), b\((0, \d+|\d+, 0)\)",
                                       prog.case.desc):
        return True
    # torch's CPU batch_norm backward of a permuted input with one sample is wrong (training,
    # 62604810; and in eval mode, 60707156): tapegrad's equals finite differences and torch's on
    # the input made contiguous
    if prog.op == "batch_norm" and cat in ("grad", "grad2") and \
            prog.case.leaves[0].layout == "T" and prog.case.leaves[0].shape[0] == 1:
        return True
    # torch's bug: batch_norm's double backward (training, input not requiring grad) drops the
    # path through the incoming gradient: None for the bias / weight where finite differences
    # give tapegrad's values (seed 62605105, tools/fuzz.py session 20)
    if prog.op == "batch_norm" and cat == "grad2" and "torch None" in msg and \
            not prog.case.leaves[0].requires_grad:
        return True
    # degenerate: an infinite weight or bias.  PyTorch's CPU batch_norm forms its output by the
    # input's layout: x * (w * invstd) + (b - mean * w * invstd) for a contiguous (or channels-
    # last) input, inf - inf = NaN, as tapegrad's always; ((x - mean) * invstd) * w + b, +-inf,
    # for any other (surface 60772657: a strided input in eval mode, compiled calls alike)
    if prog.op == "batch_norm" and cat in ("value", "grad", "grad2", "compile") and any(
            leaf.shape == prog.case.leaves[1].shape and not np.isfinite(leaf.array).all()
            for leaf in prog.case.leaves[3:]):
        return True
    # torch's input gradient under beta=0 is 0 * upstream (NaN where upstream is NaN); tapegrad's
    # is an exact zero; under alpha=0 the same for the two factors' gradients (60762530)
    if prog.op == "addmm" and cat in ("grad", "grad2") and (
            "beta=0," in prog.case.desc or "alpha=0)" in prog.case.desc):
        return True
    # torch's bug: a max_pool window lying wholly in the padding (dilation 2 over a length-1 row)
    # gives -inf with an index past the row; torch's backward writes the gradient there, into the
    # next channel's elements (and past the tensor for the last one); tapegrad gives none
    # (surface 60756730: F.max_pool1d(x, 2, 3, 1, 2) of x (1, 3, 1): torch x.grad [0, 1, 1])
    if prog.op == "pool" and cat in ("grad", "grad2") and _max_pool_window_in_padding(prog):
        return True
    # degenerate: an inf in interpolate's input meets a neighbour weight of 0 (inf * 0 = NaN) in
    # some output elements and not others, and which ones depends on the kernel: PyTorch's own
    # bilinear x3 of a one-row input gives output rows 0 and 1 (the same source row, the same
    # weights) NaN and -inf (surface 60756539)
    if prog.op == "interpolate" and cat in ("value", "grad", "grad2") and any(
            leaf.array.dtype.kind == "f" and np.isinf(leaf.array).any()
            for leaf in prog.case.leaves):
        return True
    return False


def _max_pool_window_in_padding(prog):
    """A max_pool program some of whose windows hold no element of the input (PyTorch's output
    size rule, ceil_mode included)."""
    import re
    m = re.match(r"F\.max_pool(\d)d\(x, (\d+), (None|\d+), (\d+), (\d+), ceil_mode=(True|False)",
                 prog.case.desc)
    if not m:
        return False
    nd, k, s, pad, dil = int(m[1]), int(m[2]), m[3], int(m[4]), int(m[5])
    s = k if s == "None" else int(s)
    ceil = m[6] == "True"
    for size in prog.case.leaves[0].shape[-nd:]:
        span = size + 2 * pad - dil * (k - 1) - 1
        out = (span + (s - 1 if ceil else 0)) // s + 1
        if ceil and (out - 1) * s >= size + pad:
            out -= 1
        for o in range(out):
            if all(not 0 <= o * s - pad + j * dil < size for j in range(k)):
                return True
    return False


def _maxdiff(a, b):
    try:
        d = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
        return f"{np.nanmax(d):.3g}" if d.size else "-"
    except Exception:  # noqa: BLE001
        return "?"


def _short(a):
    s = np.array2string(np.asarray(a), precision=4, threshold=12, max_line_width=200)
    return s.replace("\n", " ")


def check_seed(seed, op_filter=None, verbose=False, show_known=False):
    import torch

    import tapegrad
    prog = Program(seed, op_filter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        t_res = run_program(torch, prog)
        g_res = run_program(tapegrad, prog, torch_modules=t_res.extra.get("state"))
    findings = compare(prog, t_res, g_res)
    if not show_known:
        findings = [(c, m) for c, m in findings if not known(prog, c, m)]
    if verbose:
        print(prog.describe())
        print("  chain:", t_res.extra.get("chain"))
        for name, res in (("torch", t_res), ("tapegrad", g_res)):
            if res.error:
                print(f"--- {name} error: {res.error}")
                print(res.extra.get("tb", ""))
    return prog, findings


# -- driver -------------------------------------------------------------------------------------------

def worker(start, stop, op_filter, progress_path, show_known=False):
    for seed in range(start, stop):
        with open(progress_path, "w") as f:
            f.write(str(seed))
        try:
            prog, findings = check_seed(seed, op_filter, show_known=show_known)
        except Exception as e:  # noqa: BLE001 - a fuzzer bug: report, keep going
            print(json.dumps({"seed": seed, "op": "?", "cat": "fuzzer-error", "msg": repr(e)[:300]}), flush=True)
            continue
        for cat, msg in findings:
            print(json.dumps({"seed": seed, "op": prog.op, "mode": prog.mode, "cat": cat,
                              "msg": msg, "desc": prog.case.desc}), flush=True)
    print(json.dumps({"done": stop}), flush=True)


def drive(first, seconds, batch, op_filter, out_path, timeout, show_known=False):
    import tempfile
    seed = first
    t_end = time.time() + seconds
    n_programs = 0
    findings = []
    prog_file = tempfile.mktemp(prefix="fuzz_progress_")
    while time.time() < t_end:
        args = [sys.executable, os.path.abspath(__file__), "--worker", f"{seed}:{seed + batch}",
                "--progress", prog_file]
        if op_filter:
            args += ["--op", ",".join(op_filter)]
        if show_known:
            args += ["--all"]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
            rc, stdout = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, stdout = "timeout", (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
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
        if done is None:
            try:
                crashed = int(open(prog_file).read())
            except (OSError, ValueError):
                crashed = seed
            findings.append({"seed": crashed, "op": "?", "cat": "process-crash", "msg": f"worker exit {rc}"})
            n_programs += crashed - seed + 1
            seed = crashed + 1
        else:
            n_programs += batch
            seed += batch
    with open(out_path, "w") as f:
        for rec in findings:
            f.write(json.dumps(rec) + "\n")
    summary = {}
    for rec in findings:
        key = (rec["cat"], rec.get("op"), rec["msg"][:60])
        summary.setdefault(key, []).append(rec["seed"])
    print(f"{n_programs} programs (seeds {first}..{seed - 1}), {len(findings)} findings, "
          f"{len(summary)} distinct; written to {out_path}")
    for (cat, op_, msg), seeds in sorted(summary.items(), key=lambda kv: -len(kv[1])):
        print(f"  [{cat}] {op_}: {msg} ... x{len(seeds)} seeds {seeds[:5]}")
    return n_programs, findings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--op", default=None, help="comma-separated op names (see OPS)")
    ap.add_argument("--out", default="fuzz_findings.jsonl")
    ap.add_argument("--repro", type=int, default=None)
    ap.add_argument("--seeds", default=None, help="A:B, in process")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--progress", default=None)
    ap.add_argument("--all", action="store_true", help="also report the KNOWN differences")
    a = ap.parse_args(argv)
    op_filter = a.op.split(",") if a.op else None
    if a.worker:
        s, e = map(int, a.worker.split(":"))
        worker(s, e, op_filter, a.progress, a.all)
        return 0
    if a.repro is not None:
        prog, findings = check_seed(a.repro, op_filter, verbose=True, show_known=True)
        for cat, msg in findings:
            print(f"[{cat}] {msg}")
        return 1 if findings else 0
    if a.seeds:
        s, e = map(int, a.seeds.split(":"))
        n = 0
        for seed in range(s, e):
            prog, findings = check_seed(seed, op_filter, show_known=a.all)
            n += 1
            if findings:
                cats = sorted({c for c, _ in findings})
                print(f"seed {seed} {cats} {prog.op}/{prog.mode}/chain{prog.n_chain}: {prog.case.desc}"
                      f"\n    {findings[0][1][:400]}")
        return 0
    drive(a.first, a.seconds, a.batch, op_filter, a.out, a.timeout, a.all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
