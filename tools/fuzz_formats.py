"""Differential fuzzer of the CHECKPOINT FORMAT, the SPARSE LAYOUTS and TORCH.MASKED, against
PyTorch (`python tools/fuzz.py --kind formats`, a kind of its own: the seeds of the other kinds
keep their programs).

    python tools/fuzz.py --kind formats --seconds 600      # subprocess-isolated batches
    python tools/fuzz_formats.py --seeds 0:300             # in process, one line per finding
    python tools/fuzz_formats.py --repro 17                # one seed: its source and findings

A program is Python source over `torch`, drawn from the seed alone (the generator tracks the
shapes and layouts it builds), run once with `torch` bound to PyTorch and once to tapegrad.
Each statement runs on its own: the two libraries must agree on raising (the same builtin
exception type) and every value the program records in R must agree (value, dtype, shape, layout;
strides where the family says so).  The seed picks the family (seed % 3):

  - save:   a random nested object (dicts, OrderedDicts, lists, tuples, numbers, strings, None,
            torch.Size and dtypes; tensors of every dtype, 0-d and empty ones, views sharing a
            base's storage - transposed, step-sliced, offset -, Parameters, leaves requiring grad,
            module state dicts) is saved by one library and loaded by the other (weights_only
            True or False), both ways.  The loaded object must equal the loading library's own
            build of the same source: types, values, dtypes, shapes, strides, storage offsets,
            requires_grad and which tensors share a storage; and the data.pkl records the two
            libraries write must be the same bytes.
  - sparse: COO (coalesced, or with duplicate and unsorted indices), CSR and CSC tensors built
            from dense tensors or from index and value tensors that require grad, then a chain of
            to_dense, @ / mm / matmul / mv with dense operands (which may require grad),
            transpose / t, add, mul by a scalar, sum (whole and torch.sparse.sum over dims),
            coalesce and layout conversions; then the gradients to the values and the dense
            operands of a weighted sum of the result.
  - masked: torch.masked's reductions and normalisations with random masks (all-False rows,
            all-False masks, broadcast masks), dims, keepdim and dtype, then the gradient of a
            weighted sum of the finite part of the output.

Categories: value / dtype / meta / requires_grad (a recorded value differs), refusal (tapegrad
raises where PyTorch computes), accepts (PyTorch refuses: its sparse kernels have no integer
products, no complex autograd through the sparse constructors, no torch.sparse.sum of CSR / CSC,
no CSR + CSC), exception-type, save-value / save-refusal / save-bytes.  KNOWN and not reported:
an empty tensor's strides and storage offset (tapegrad's are the contiguous ones: numpy keeps
none for an empty array), and so the pickles of objects holding one.
"""
from __future__ import annotations

import argparse
import io
import os
import random
import sys
import traceback
import warnings
import zipfile

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

FAMILIES = ("save", "sparse", "masked")
ALL_DTYPES = ("float32", "float64", "float16", "int8", "int16", "int32", "int64",
              "uint8", "bool", "complex64", "complex128")


# ---------------------------------------------------------------------------------------------
# literals

def _num(v):
    if isinstance(v, complex):
        return f"complex({_num(v.real)}, {_num(v.imag)})"
    if isinstance(v, float):
        if v != v:
            return "float('nan')"
        if v in (float("inf"), float("-inf")):
            return f"float('{'-' if v < 0 else ''}inf')"
        return repr(v)
    return repr(v)


def _lit(x):
    if isinstance(x, list):
        return "[" + ", ".join(_lit(v) for v in x) + "]"
    return _num(x)


def values(r, shape, dtype, special=True):
    """A numpy array of `shape` with values fit for `dtype`: small numbers, ties, zeros,
    -0.0 and now and then NaN / inf for the floating dtypes."""
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        a = np.array([r.random() < 0.5 for _ in range(n)])
    elif dtype.startswith(("int", "uint")):
        lo = 0 if dtype == "uint8" else -9
        a = np.array([r.randint(lo, 9) for _ in range(n)], dtype=np.int64)
    else:
        pool = [0.0, -0.0, 1.0, -1.5, 0.5, 2.25, -3.0]
        a = np.array([r.choice(pool) if r.random() < 0.3 else round(r.uniform(-3, 3), 4)
                      for _ in range(n)])
        if special and r.random() < 0.1 and n:
            a[r.randrange(n)] = r.choice([float("nan"), float("inf"), float("-inf")])
        if dtype.startswith("complex"):
            a = a + 1j * np.array([round(r.uniform(-2, 2), 3) for _ in range(n)])
    return a.reshape(shape)


def tensor_src(arr, dtype, requires_grad=False):
    rg = ", requires_grad=True" if requires_grad else ""
    if arr.size == 0 and arr.ndim > 1:   # (a nested list loses the shape of an empty array)
        return f"torch.tensor([], dtype=torch.{dtype}).reshape({tuple(arr.shape)}){rg and '.requires_grad_()'}"
    return f"torch.tensor({_lit(arr.tolist())}, dtype=torch.{dtype}{rg})"


def rand_shape(r, max_nd=3, max_size=4, zero=0.1):
    nd = r.choice(range(max_nd + 1))
    return tuple(0 if r.random() < zero else r.randint(1, max_size) for _ in range(nd))


# ---------------------------------------------------------------------------------------------
# programs

class Program:
    def __init__(self, seed, family, steps, save=None):
        self.seed, self.family, self.steps, self.save = seed, family, steps, save

    def script(self):
        lines = ["import torch", "R = {}"] + self.steps
        if self.save:
            w = self.save
            lines += [f"# then: torch.save(obj) / torch.load(..., weights_only={w}) "
                      "across the two libraries"]
        return "\n".join(lines)


def gen_save(seed, r):
    steps, names = [], []
    tensors = []  # names of the tensors built so far (views draw their base from them)

    def tensor():
        k = len(tensors)
        dtype = r.choice(ALL_DTYPES)
        kind = r.random()
        if kind < 0.35 and tensors:
            base = r.choice(tensors)
            nm = f"t{k}"
            view = r.choice(["{b}[1:]", "{b}.t()" , "{b}[::2]", "{b}.unsqueeze(0)",
                             "{b}.reshape(-1)[1:]", "{b}.flatten()[::3]", "{b}.transpose(0, -1)",
                             "{b}[..., :1]", "{b}.view(-1)"])
            steps.append(f"{nm} = {view.format(b=base)}")
        else:
            shape = rand_shape(r, zero=0.15)
            nm = f"t{k}"
            steps.append(f"{nm} = {tensor_src(values(r, shape, dtype), dtype)}")
            if dtype in ("float32", "float64", "complex64") and r.random() < 0.3:
                steps.append(f"{nm}.requires_grad_(True)")
            elif dtype in ("float32", "float64") and r.random() < 0.3:
                steps.append(f"{nm} = torch.nn.Parameter({nm}, requires_grad={r.random() < 0.7})")
        tensors.append(nm)
        return nm

    def leaf(depth):
        c = r.random()
        if c < 0.5 or depth > 2:
            return tensor()
        if c < 0.6:
            return r.choice(["3", "-2.5", "'name'", "None", "True", "torch.Size([2, 0, 3])",
                             "torch.float16", "torch.int64", "(1, 'x')", "1e300"])
        if c < 0.68:
            return state_dict()
        n = r.randint(0, 3)
        items = [leaf(depth + 1) for _ in range(n)]
        kind = r.choice(["dict", "list", "tuple", "od"])
        if kind == "list":
            return "[" + ", ".join(items) + "]"
        if kind == "tuple":
            return "(" + "".join(i + ", " for i in items) + ")"
        pairs = ", ".join(f"'k{j}': {v}" for j, v in enumerate(items))
        if kind == "od":
            return "collections.OrderedDict({" + pairs + "})"
        return "{" + pairs + "}"

    def state_dict():
        k = len(names)
        names.append(k)
        mod = r.choice(["torch.nn.Linear(3, 2)", "torch.nn.BatchNorm1d(2)",
                        "torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))",
                        "torch.nn.Conv1d(1, 2, 2, bias=False)"])
        steps.append(f"m{k} = {mod}")
        steps.append(f"for i, p in enumerate(m{k}.state_dict().values()): "
                     f"p.copy_(torch.arange(p.numel()).reshape(p.shape) * (0.25 + i))")
        sd = f"m{k}.state_dict()"
        return sd if r.random() < 0.7 else f"m{k}.state_dict(keep_vars=True)"

    steps.append("import collections")
    top = leaf(0) if r.random() < 0.3 else "{" + ", ".join(
        f"'o{j}': {leaf(1)}" for j in range(r.randint(1, 5))) + "}"
    steps.append(f"obj = {top}")
    return Program(seed, "save", steps, save=r.random() < 0.5)


SPARSE_DT = ("float32", "float64", "float64", "complex64", "int64")


def gen_sparse(seed, r):
    steps = []
    dtype = r.choice(SPARSE_DT)
    isfloat = dtype.startswith(("float", "complex"))
    m, n = r.randint(0, 4), r.randint(0, 4)
    if r.random() < 0.15:
        m = n = r.randint(1, 3)
    d = values(r, (m, n), dtype, special=r.random() < 0.2)
    d = d * (np.array([r.random() < 0.5 for _ in range(m * n)]).reshape(m, n))
    if dtype == "int64":
        d = d.astype(np.int64)
    layout = r.choice(["coo", "csr", "csc"])
    grads = []  # names of the leaves requiring grad
    how = r.random()
    if how < 0.4 or not isfloat:
        steps.append(f"d = {tensor_src(d, dtype)}")
        conv = {"coo": "d.to_sparse()", "csr": "d.to_sparse_csr()", "csc": "d.to_sparse_csc()"}
        if isfloat and r.random() < 0.4:
            steps.append("d.requires_grad_(True)")
            grads.append("d")
        steps.append(f"s = {conv[layout]}")
    else:
        # from index and value tensors (values require grad)
        nz = [(i, j) for i in range(m) for j in range(n) if r.random() < 0.5]
        if layout == "coo":
            if nz and r.random() < 0.4:  # duplicates and unsorted indices: uncoalesced
                nz = nz + [r.choice(nz) for _ in range(r.randint(1, 2))]
                r.shuffle(nz)
            idx = [[i for i, _ in nz], [j for _, j in nz]]
            v = values(r, (len(nz),), dtype, special=False)
            steps.append(f"v = {tensor_src(v, dtype, requires_grad=True)}")
            steps.append(f"s = torch.sparse_coo_tensor({_lit(idx)}, v, ({m}, {n}))")
        else:
            outer, inner = (m, n) if layout == "csr" else (n, m)
            key = (lambda p: p) if layout == "csr" else (lambda p: (p[1], p[0]))
            nz = sorted(nz, key=key)
            comp = [0]
            for o in range(outer):
                comp.append(comp[-1] + sum(1 for p in nz if key(p)[0] == o))
            plain = [key(p)[1] for p in nz]
            v = values(r, (len(nz),), dtype, special=False)
            steps.append(f"v = {tensor_src(v, dtype, requires_grad=True)}")
            fn = "sparse_csr_tensor" if layout == "csr" else "sparse_csc_tensor"
            steps.append(f"s = torch.{fn}({comp}, {plain}, v, ({m}, {n}))")
        grads.append("v")
    shape = [m, n]
    cur, is_sparse = "s", True
    for k in range(r.randint(1, 4)):
        nm = f"x{k}"
        c = r.random()
        if is_sparse and c < 0.15:
            steps.append(f"{nm} = {cur}.t()" if r.random() < 0.5 else f"{nm} = {cur}.transpose(0, 1)")
            shape = shape[::-1]
        elif c < 0.3:
            sc = r.choice(["2.5", "-1", "0"]) if isfloat else r.choice(["2", "-3"])
            steps.append(f"{nm} = {cur} * {sc}" if r.random() < 0.6 else f"{nm} = {sc} * {cur}")
        elif c < 0.55 and len(shape) == 2:
            kk = r.randint(0, 3)
            w = values(r, (shape[1], kk), dtype, special=False)
            rg = isfloat and r.random() < 0.5
            wn = f"w{k}"
            steps.append(f"{wn} = {tensor_src(w, dtype, requires_grad=rg)}")
            if rg:
                grads.append(wn)
            op = r.choice(["{a} @ {b}", "torch.mm({a}, {b})", "torch.matmul({a}, {b})",
                           "torch.sparse.mm({a}, {b})"] + (["torch.mv({a}, {b}[:, 0])"] if kk else []))
            steps.append(f"{nm} = " + op.format(a=cur, b=wn))
            shape = [shape[0], kk] if "mv" not in op else [shape[0]]
            is_sparse = False
        elif c < 0.62 and len(shape) == 2:
            kk = r.randint(1, 3)
            w = values(r, (kk, shape[0]), dtype, special=False)
            rg = isfloat and r.random() < 0.5
            wn = f"w{k}"
            steps.append(f"{wn} = {tensor_src(w, dtype, requires_grad=rg)}")
            if rg:
                grads.append(wn)
            steps.append(f"{nm} = {wn} @ {cur}")
            shape, is_sparse = [kk, shape[1]], False
        elif c < 0.72 and is_sparse:
            # a second operand of the same layout and shape
            e = values(r, tuple(shape), dtype, special=False)
            e = e * (np.array([r.random() < 0.4 for _ in range(int(np.prod(shape)))]).reshape(shape))
            if dtype == "int64":
                e = e.astype(np.int64)
            conv = r.choice([".to_sparse()", ".to_sparse_csr()", ".to_sparse_csc()"])
            steps.append(f"e{k} = {tensor_src(e, dtype)}{conv}")
            op = r.choice(["{a} + {b}", "torch.add({a}, {b}, alpha=2)", "{a} - {b}", "{a}.add({b})"])
            steps.append(f"{nm} = " + op.format(a=cur, b=f"e{k}"))
        elif c < 0.8:
            if is_sparse and r.random() < 0.5 and len(shape) == 2:
                dim = r.choice(["0", "1", "(0, 1)", "-1"])
                steps.append(f"{nm} = torch.sparse.sum({cur}, {dim})")
                shape = [] if dim == "(0, 1)" else [shape[1] if dim == "0" else shape[0]]
            else:
                steps.append(f"{nm} = {cur}.sum()")
                shape = []
            steps.append(f"R['{nm}'] = {nm}")
            cur, is_sparse = nm, (is_sparse and len(shape) == 1 and "sparse.sum" in steps[-2])
            break
        elif c < 0.9 and is_sparse:
            conv = r.choice([".to_dense()", ".coalesce()", ".to_sparse_csr()", ".to_sparse_csc()",
                             ".to_sparse()", ".values()"])
            steps.append(f"{nm} = {cur}{conv}")
            if conv == ".to_dense()":
                is_sparse = False
            if conv == ".values()":
                steps.append(f"R['{nm}'] = {nm}")
                cur = nm
                break
        else:
            steps.append(f"{nm} = {cur}.to_dense()" if is_sparse else f"{nm} = {cur} + 1")
            is_sparse = False
        steps.append(f"R['{nm}'] = {nm}")
        cur = nm
    if grads:
        dense = f"{cur}.to_dense()" if is_sparse else cur
        steps.append(f"out = {dense}")
        steps.append("W = torch.linspace(-1, 2, out.numel(), dtype=torch.float64)"
                     ".to(out.dtype).reshape(out.shape)")
        steps.append("(out * W).sum().real.backward()" if dtype.startswith("complex")
                     else "(out * W).sum().backward()")
        for g in grads:
            steps.append(f"R['{g}.grad'] = {g}.grad")
    return Program(seed, "sparse", steps)


MASKED = {  # name: extra argument source drawn per call
    "sum": "", "prod": "", "amax": "", "amin": "", "argmax": "", "argmin": "", "mean": "",
    "median": "", "logsumexp": "", "norm": "ord", "var": "corr", "std": "corr",
    "softmax": "", "log_softmax": "", "softmin": "", "normalize": "ord",
    "cumsum": "", "cumprod": "",
}
NEEDS_DIM = ("softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod", "median")
ONE_DIM = NEEDS_DIM + ("argmax", "argmin")


def gen_masked(seed, r):
    steps = []
    dtype = r.choice(["float32", "float64", "float64", "int64"])
    nd = r.randint(1, 3)
    shape = tuple(0 if r.random() < 0.07 else r.randint(1, 4) for _ in range(nd))
    x = values(r, shape, dtype, special=r.random() < 0.15)
    isfloat = dtype.startswith("float")
    rg = isfloat and r.random() < 0.7
    steps.append(f"x = {tensor_src(x, dtype, requires_grad=rg)}")
    mshape = list(shape)
    if r.random() < 0.25 and nd > 1:  # a broadcast mask
        mshape[r.randrange(nd)] = 1
    mk = np.array([r.random() < 0.6 for _ in range(int(np.prod(mshape)))]).reshape(mshape)
    if r.random() < 0.4 and mk.size and nd >= 1:  # all-False rows along the last dim
        for i in range(mk.shape[0]):
            if r.random() < 0.5:
                mk[i] = False
    if r.random() < 0.08:
        mk[...] = False
    steps.append(f"mask = {tensor_src(mk, 'bool')}")
    fn = r.choice(list(MASKED))
    args = ["x"]
    if fn in ("norm", "normalize"):
        args.append(r.choice(["2.0", "1", "float('inf')", "3.0", "0"] if fn == "norm"
                             else ["2.0", "1", "float('inf')"]))
    if fn in NEEDS_DIM or fn in ONE_DIM:
        args.append(str(r.randint(-nd, nd - 1)) if fn in NEEDS_DIM or r.random() < 0.8 else "None")
    elif r.random() < 0.8:
        ds = r.sample(range(nd), r.randint(1, nd))
        args.append(str(ds[0]) if len(ds) == 1 and r.random() < 0.5 else str(tuple(ds)))
    kw = ["mask=mask"]
    if fn not in NEEDS_DIM[:5] + ("cumsum", "cumprod") and r.random() < 0.4:
        kw.append("keepdim=True")
    if MASKED[fn] == "corr" and r.random() < 0.6:
        kw.append(r.choice(["unbiased=False", "unbiased=True", "correction=0", "correction=2"]))
    if r.random() < 0.15:
        kw.append("dtype=torch.float64")
    steps.append(f"y = torch.masked.{fn}({', '.join(args + kw)})")
    steps.append("R['y'] = y")
    if rg:
        steps.append("g = torch.where(torch.isfinite(y), y, torch.zeros_like(y))"
                     " if y.is_floating_point() else None")
        steps.append("W = torch.linspace(-1, 2, y.numel(), dtype=torch.float64)"
                     ".to(y.dtype).reshape(y.shape) if g is not None else None")
        steps.append("if g is not None and g.requires_grad: (g * W).sum().backward()")
        steps.append("R['x.grad'] = x.grad")
    return Program(seed, "masked", steps)


def generate(seed):
    r = random.Random(f"formats-{seed}")
    fam = FAMILIES[seed % 3]
    return {"save": gen_save, "sparse": gen_sparse, "masked": gen_masked}[fam](seed, r)


# ---------------------------------------------------------------------------------------------
# running and comparing

def _libs():
    import torch
    import tapegrad
    return torch, tapegrad


def _exc_name(e):
    for c in type(e).__mro__:
        if c.__module__ == "builtins":
            return c.__name__
    return type(e).__name__


def run(lib, prog):
    """Run the program's statements one by one: (namespace, [(step, exception name or None)])."""
    ns = {"torch": lib, "R": {}}
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for st in prog.steps:
            try:
                exec(st, ns)  # noqa: S102 - the fuzzer runs its own generated source
                out.append(None)
            except Exception as e:  # noqa: BLE001 - compared between the libraries
                out.append((_exc_name(e), str(e).split("\n")[0][:160]))
    return ns, out


def _np(x):
    """(layout, dtype name, shape, numpy values) of a tensor of either library."""
    x = x.detach()
    layout = str(x.layout).replace("torch.", "")
    dt = str(x.dtype).replace("torch.", "")
    shape = tuple(x.shape)
    if layout != "strided":
        x = x.to_dense()
    if dt in ("float16", "bfloat16"):
        x = x.float()
    return layout, dt, shape, np.asarray(x.numpy())


def _tol(dt):
    return {"float64": 1e-9, "complex128": 1e-9, "float16": 2e-3, "bfloat16": 1e-2}.get(dt, 2e-5)


def same_values(a, b, dt):
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        tol = _tol(dt)
        with np.errstate(invalid="ignore"):
            return bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
                        and np.array_equal(np.isnan(a), np.isnan(b)))
    return bool(np.array_equal(a, b))


def compare_value(t, g, path, found):
    """One recorded value (torch's, tapegrad's)."""
    if t is None or g is None or not hasattr(t, "dtype"):
        if (t is None) != (g is None):
            found.append((path, "value", f"torch {type(t).__name__}, tapegrad {type(g).__name__}"))
        elif t is not None and not hasattr(g, "dtype") and t != g:
            found.append((path, "value", f"torch {t!r}, tapegrad {g!r}"))
        return
    if not hasattr(g, "dtype"):
        found.append((path, "value", f"torch a tensor, tapegrad {type(g).__name__}"))
        return
    lt, dtt, st, at = _np(t)
    lg, dtg, sg, ag = _np(g)
    if (lt, dtt, st) != (lg, dtg, sg):
        found.append((path, "dtype" if dtt != dtg else "meta",
                      f"torch {lt} {dtt} {st}, tapegrad {lg} {dtg} {sg}"))
    elif not same_values(at, ag, dtt):
        found.append((path, "value", f"torch {at.ravel()[:8]}, tapegrad {ag.ravel()[:8]}"))
    elif t.requires_grad != g.requires_grad:
        found.append((path, "requires_grad", f"torch {t.requires_grad}, tapegrad {g.requires_grad}"))


def check_program(prog):
    torch, tapegrad = _libs()
    found = []
    nt, et = run(torch, prog)
    ng, eg = run(tapegrad, prog)
    for i, (a, b) in enumerate(zip(et, eg)):
        if (a is None) != (b is None) or (a and b and a[0] != b[0]):
            what = "refusal" if b is not None and a is None else (
                "accepts" if a is not None and b is None else "exception-type")
            found.append((f"step {i}", what, f"{prog.steps[i][:120]!r}: torch {a}, tapegrad {b}"))
            break
    if found:
        return found    # (the values recorded after a step one library refused follow from it)
    for key in nt["R"]:
        if key in ng["R"]:
            compare_value(nt["R"][key], ng["R"][key], key, found)
    if prog.family == "save" and "obj" in nt and "obj" in ng:
        check_save(prog, nt["obj"], ng["obj"], found)
    return found


# -- save ---------------------------------------------------------------------------------------

def _walk(obj, path="obj"):
    """(path, leaf) pairs of a nested object, containers in order."""
    if isinstance(obj, dict):
        yield path, ("dict", type(obj).__name__, list(obj.keys()))
        for k, v in obj.items():
            yield from _walk(v, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)) and not type(obj).__name__ == "Size":
        yield path, ("seq", type(obj).__name__, len(obj))
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, obj


def _describe(obj):
    """A library-neutral description of a nested object: containers, scalars, and per tensor
    its class name, dtype, shape, strides, offset, requires_grad, values and the index of the
    first tensor sharing its storage."""
    out, storages = [], []
    for path, leaf in _walk(obj):
        if hasattr(leaf, "dtype") and hasattr(leaf, "stride"):
            ptr = leaf.untyped_storage().data_ptr() if leaf.numel() else None
            share = None
            if ptr is not None:
                if ptr not in storages:
                    storages.append(ptr)
                share = storages.index(ptr)
            layout, dt, shape, arr = _np(leaf)
            # (KNOWN: an empty tensor's strides are its contiguous ones in tapegrad, numpy holds
            # no strides for an empty array; PyTorch keeps a view's, e.g. empty(0)[::2] (2,))
            stride = tuple(leaf.stride()) if leaf.numel() else None
            offset = leaf.storage_offset() if leaf.numel() else None     # (the same)
            out.append((path, ("tensor", type(leaf).__name__, dt, shape, stride,
                               offset, leaf.requires_grad, share), arr))
        elif isinstance(leaf, tuple) and leaf and leaf[0] in ("dict", "seq"):
            out.append((path, leaf, None))
        else:
            s = str(leaf).replace("tapegrad.", "torch.")
            out.append((path, (type(leaf).__name__, s), None))
    return out


def _same_description(a, b):
    if len(a) != len(b):
        return f"{len(a)} leaves against {len(b)}"
    for (pa, da, va), (pb, db, vb) in zip(a, b):
        if pa != pb or da != db:
            return f"{pa}: {da} against {db}"
        if va is not None and not same_values(va, vb, da[2]):
            return f"{pa}: values {va.ravel()[:6]} against {vb.ravel()[:6]}"
    return None


def _pickle_bytes(buf):
    buf.seek(0)
    with zipfile.ZipFile(buf) as z:
        name = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        return z.read(name)


def check_save(prog, obj_t, obj_g, found):
    torch, tapegrad = _libs()
    wo = bool(prog.save)
    ref_t, ref_g = _describe(obj_t), _describe(obj_g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for writer, reader, obj, ref, tag in ((tapegrad, torch, obj_g, ref_t, "tapegrad->torch"),
                                              (torch, tapegrad, obj_t, ref_g, "torch->tapegrad"),
                                              (tapegrad, tapegrad, obj_g, ref_g, "tapegrad->tapegrad")):
            buf = io.BytesIO()
            try:
                writer.save(obj, buf)
                buf.seek(0)
                back = reader.load(buf, weights_only=wo)
            except Exception as e:  # noqa: BLE001 - compared with the other direction
                err = (_exc_name(e), str(e).split("\n")[0][:200])
                # the other library's own round trip decides whether this is expected
                other = io.BytesIO()
                try:
                    reader.save(obj_t if reader is torch else obj_g, other)
                    other.seek(0)
                    reader.load(other, weights_only=wo)
                    found.append((tag, "save-refusal", f"{err}"))
                except Exception as e2:  # noqa: BLE001
                    if _exc_name(e2) != err[0]:
                        found.append((tag, "save-exception-type", f"{err} vs {_exc_name(e2)}"))
                continue
            diff = _same_description(_describe(back), ref)
            if diff:
                found.append((tag, "save-value", diff))
    if any(d[0] == "tensor" and d[4] is None for _, d, _ in ref_t):
        return  # an empty tensor's strides differ (KNOWN above), and so would the pickles
    try:
        bt, bg = io.BytesIO(), io.BytesIO()
        torch.save(obj_t, bt)
        tapegrad.save(obj_g, bg)
        if _pickle_bytes(bt) != _pickle_bytes(bg):
            found.append(("data.pkl", "save-bytes", "the pickles differ"))
    except Exception:  # noqa: BLE001 - a refusal is reported above
        pass


# ---------------------------------------------------------------------------------------------

def check_seed(seed):
    prog = generate(seed)
    return prog, check_program(prog)


def summary(seed):
    """The driver's records of one seed (tools/fuzz.py --kind formats)."""
    prog, found = check_seed(seed)
    return [{"op": f"{prog.family}:{where}", "mode": prog.family, "cat": cat, "msg": msg}
            for where, cat, msg in found]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default=None, help="A:B, in process")
    ap.add_argument("--repro", type=int, default=None)
    a = ap.parse_args(argv)
    if a.repro is not None:
        prog, found = check_seed(a.repro)
        print(prog.script())
        for where, cat, msg in found:
            print(f"# [{where}] [{cat}] {msg}")
        return 1 if found else 0
    s, e = map(int, a.seeds.split(":"))
    n_found = 0
    for seed in range(s, e):
        try:
            prog, found = check_seed(seed)
        except Exception:  # noqa: BLE001 - a fuzzer bug: show it, keep going
            print(f"seed {seed} fuzzer-error\n{traceback.format_exc()}")
            continue
        n_found += bool(found)
        for where, cat, msg in found:
            print(f"seed {seed} {prog.family} [{where}] [{cat}] {msg[:300]}", flush=True)
    print(f"{e - s} programs, {n_found} with findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
