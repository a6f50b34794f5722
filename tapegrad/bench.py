"""`python -m tapegrad bench`: a short benchmark of tapegrad against hand-written numpy and PyTorch.

This module is also the one definition of the workloads that the pytest-benchmark suite in bench/
times (bench/README.md): each workload has a hand-written numpy reference (a forward that keeps
what the derivatives need, then a manual backward) and one graph function, generic over the
library, run on tapegrad and on torch (`lib` is the `tapegrad` or the `torch` module: tapegrad
speaks PyTorch's API, so the same code builds both graphs).

Workloads: chains of elementwise ops (`chain`), a wide graph, fan-out/fan-in, reductions with
axes, indexing, softmax cross-entropy (`graph_cases`), a Hessian-vector product against a
gradient of the same function (`hvp_*`), an MLP 784-256-10 training step (`mlp_*`), the cubic
polynomial fit of sin from the PyTorch tutorial (`poly_*`); and footprints:
import time (`import_times`) and peak RSS of the MLP step (`peak_rss`).

The module imports only numpy at the top: tapegrad and torch are imported where used, so the
peak-RSS probe can run this file as a plain script (`runpy.run_path`) for its numpy-only
measurement without importing tapegrad.

Why it ships in the runtime package (issue 18 asked): `python -m tapegrad bench` is a user
command, the way to check the speed claims of the README on one's own machine and BLAS from an
installed wheel, with no source checkout; keeping one definition of the workloads here keeps that
table and the bench/ suite measuring the same code.  It costs 42 KB of source (13 KB in the
wheel) and nothing at `import tapegrad`: it loads only when the command (or bench/) imports it
(tapegrad/__init__.py's lazy submodules; tests/test_packaging.py checks that).
"""
from __future__ import annotations as _annotations

import argparse
import ctypes
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# -- threads and BLAS ------------------------------------------------------------------------------

def _loaded_libraries(word: str) -> list[str]:
    """Paths of the shared libraries mapped into this process whose name contains `word`."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:      # not Linux: no runtime information, the build information still prints
        return []
    return sorted(p for p in paths if word in os.path.basename(p).lower())


def _openblas_call(name: str, *args):
    """Call OpenBLAS's `name` (e.g. "get_num_threads") in numpy's loaded OpenBLAS, or None.

    numpy's wheels bundle scipy-openblas, whose symbols carry a prefix and a 64-bit suffix
    (scipy_openblas_get_num_threads64_); plain builds export openblas_get_num_threads.
    """
    for path in _loaded_libraries("openblas"):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in (f"scipy_openblas_{name}64_", f"openblas_{name}64_", f"openblas_{name}"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                if name.startswith("get_co"):
                    fn.restype = ctypes.c_char_p
                return fn(*args)
    return None


def limit_threads(n: int = 1) -> str:
    """Run everything on `n` threads; return how (for the report).

    Environment variables (setdefault) reach the runtimes loaded later (torch) and subprocesses;
    numpy's OpenBLAS is already loaded, so it is limited in place with threadpoolctl when that is
    installed, or by calling OpenBLAS's own openblas_set_num_threads through ctypes.
    """
    for var in THREAD_VARS:
        os.environ.setdefault(var, str(n))
    try:
        from threadpoolctl import threadpool_limits
    except Exception:
        found = _openblas_call("set_num_threads", ctypes.c_int(n)) is not None
        how = ("openblas_set_num_threads via ctypes" if found
               else "nothing (no threadpoolctl, no OpenBLAS found): environment variables only")
    else:
        global _LIMITER
        _LIMITER = threadpool_limits(limits=n)       # keep alive: it restores on collection
        how = "threadpoolctl"
    torch = sys.modules.get("torch")
    if torch is not None:
        set_torch_threads(torch, n)
    from ._threads import set_num_threads
    set_num_threads(n)                                  # tapegrad's own kernel pool
    return how


_LIMITER = None


def set_torch_threads(torch, n: int = 1) -> None:
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:     # already set, or parallel work already started
        pass


def blas_info() -> dict[str, Any]:
    """The BLAS numpy (and torch, if imported) uses, and their thread counts in effect."""
    info: dict[str, Any] = {"numpy": np.__version__}
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["numpy_blas"] = f"{blas.get('name')} {blas.get('version')}"
    except Exception as e:      # pragma: no cover - numpy < 2 prints instead
        info["numpy_blas"] = f"unknown ({e!r})"
    try:
        from threadpoolctl import threadpool_info
    except Exception:
        core = _openblas_call("get_corename")
        threads = _openblas_call("get_num_threads")
        if core is not None:
            info["openblas_core"] = core.decode()
        if threads is not None:
            info["openblas_threads"] = threads
    else:
        info["threadpoolctl"] = [
            {k: p.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
            for p in threadpool_info()]
    torch = sys.modules.get("torch")
    if torch is not None:
        cfg = torch.__config__.show()
        blas = next((part.split("=", 1)[1] for part in cfg.replace(",", " ").split()
                     if part.startswith("BLAS_INFO=")), "unknown")
        info["torch"] = torch.__version__
        info["torch_blas"] = blas
        info["torch_threads"] = torch.get_num_threads()
    return info


def blas_line(info: dict[str, Any] | None = None) -> str:
    info = blas_info() if info is None else info
    parts = [f"numpy {info['numpy']}: {info['numpy_blas']}"]
    if "openblas_core" in info:
        parts[-1] += f" (core {info['openblas_core']}, {info.get('openblas_threads')} thread(s))"
    for pool in info.get("threadpoolctl", []):
        parts.append(f"{pool['internal_api']} {pool['version']} {pool['architecture']} "
                     f"{pool['num_threads']} thread(s)")
    if "torch" in info:
        parts.append(f"torch {info['torch']}: {info['torch_blas']}, "
                     f"{info['torch_threads']} thread(s)")
    return "; ".join(parts)


def thread_env() -> dict[str, str | None]:
    return {v: os.environ.get(v) for v in THREAD_VARS}


# -- chain: a long sequence of cheap elementwise ops ---------------------------------------------

OPS_PER_CYCLE = 10
C_MUL = 1.0001
C_ADD = 0.001


def chain(x, cycles, tanh, exp, log, mul=C_MUL, add=C_ADD):
    """`cycles` x 10 elementwise ops; values stay in (-1, 1) (tanh) and exp's input is bounded.

    Generic over the library: tanh/exp/log are the library's functions; the rest are operators.
    """
    for _ in range(cycles):
        x = x * mul
        x = x + add
        x = tanh(x)
        x = exp(x)
        x = log(x)
        x = x - add
        x = -x
        x = x / mul
        x = tanh(x)
        x = -x
    return x


def numpy_chain(x, cycles, g, mul=C_MUL, add=C_ADD):
    """Hand-written reverse mode of `chain` in numpy: (value, d(sum(g * value))/dx).

    The forward stores only what the derivatives need (tanh and exp outputs; exp's output is log's
    input); the reverse loop applies each op's derivative, last op first.
    """
    saved = []
    for _ in range(cycles):
        x = x * mul
        x = x + add
        t1 = x = np.tanh(x)
        e = x = np.exp(x)
        x = np.log(x)
        x = x - add
        x = -x
        x = x / mul
        t2 = x = np.tanh(x)
        x = -x
        saved.append((t1, e, t2))
    for t1, e, t2 in reversed(saved):
        g = -g                      # neg
        g = g * (1 - t2 * t2)       # tanh
        g = g / mul                 # div by constant
        g = -g                      # neg
        #                             sub constant: identity
        g = g / e                   # log (its input is exp's output)
        g = g * e                   # exp
        g = g * (1 - t1 * t1)       # tanh
        #                             add constant: identity
        g = g * mul                 # mul by constant
    return x, g


# -- graph workloads: one differentiable function of some leaves, a numpy reference for it -------

@dataclass
class GraphCase:
    """A graph workload: leaves requiring grad, constants, a generic graph and its numpy reference.

    `graph(lib, **tensors)` builds the output with tapegrad or torch; `numpy(seed, **arrays)`
    returns (value, {leaf name: gradient of sum(seed * value)}) by hand.  `seed` is the output's
    adjoint (None: scalar output, backward() unseeded).
    """
    id: str
    group: str
    leaves: dict[str, np.ndarray]
    consts: dict[str, np.ndarray]
    graph: Callable
    numpy: Callable
    seed: np.ndarray | None = None
    n_ops: int | None = None        # ops recorded per forward, when the graph is chain-like
    rtol: float = 1e-10             # tapegrad/torch gradient vs the numpy reference
    atol: float = 0.0
    rounds: int = 50
    warmup: int = 3
    _seeds: dict = field(default_factory=dict, repr=False)

    @property
    def dtype(self) -> str:
        return str(next(iter(self.leaves.values())).dtype)

    def tensors(self, lib) -> dict[str, Any]:
        """Fresh leaves (copies, requires_grad) and the constants, as `lib` tensors."""
        t = {k: lib.tensor(v, requires_grad=True) for k, v in self.leaves.items()}
        t.update({k: lib.from_numpy(v) for k, v in self.consts.items()})
        return t

    def seed_tensor(self, lib):
        if self.seed is None:
            return None
        key = lib.__name__
        if key not in self._seeds:
            self._seeds[key] = lib.from_numpy(self.seed)
        return self._seeds[key]

    def forward(self, lib, t):
        return self.graph(lib, **t)

    def backward(self, lib, out) -> None:
        seed = self.seed_tensor(lib)
        if seed is None:
            out.backward()
        else:
            out.backward(seed)

    def total(self, lib, t) -> dict[str, Any]:
        """Forward + backward; the leaves' gradients (lib tensors)."""
        self.backward(lib, self.forward(lib, t))
        return {k: t[k].grad for k in self.leaves}

    def reference(self):
        return self.numpy(self.seed, **self.leaves, **self.consts)

    def check(self, grads: dict[str, Any], ref_grads: dict[str, np.ndarray], rtol=None):
        """Each gradient equals the reference's (shape, dtype, values)."""
        for k, want in ref_grads.items():
            got = grads[k]
            got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
            assert got.shape == want.shape, (k, got.shape, want.shape)
            assert got.dtype == want.dtype, (k, got.dtype, want.dtype)
            np.testing.assert_allclose(got, want, rtol=self.rtol if rtol is None else rtol,
                                       atol=self.atol, err_msg=f"{self.id}: d/d{k}")

    def finite_difference_check(self, n_coords: int = 4, h: float = 1e-6) -> None:
        """The numpy reference gradient against central differences, in float64, at a few
        coordinates of each leaf."""
        leaves = {k: v.astype(np.float64) for k, v in self.leaves.items()}
        seed = None if self.seed is None else self.seed.astype(np.float64)
        _, grads = self.numpy(seed, **leaves, **self.consts)

        def scalar(**ls):
            value = self.numpy(seed, **ls, **self.consts)[0]
            return float(np.sum(value if seed is None else seed * value))

        rng = np.random.default_rng(1)
        for k, v in leaves.items():
            for flat in rng.choice(v.size, size=min(n_coords, v.size), replace=False):
                i = np.unravel_index(flat, v.shape)
                hi, lo = dict(leaves), dict(leaves)
                hi[k] = v.copy()
                hi[k][i] += h
                lo[k] = v.copy()
                lo[k][i] -= h
                fd = (scalar(**hi) - scalar(**lo)) / (2 * h)
                assert math.isclose(grads[k][i], fd, rel_tol=1e-5, abs_tol=1e-7), \
                    (self.id, k, i, grads[k][i], fd)


# wide: 20 branches of 50 ops from one input, summed at the end

WIDE_BRANCHES = 20
WIDE_OPS = 50


def _branch_consts(i: int) -> tuple[float, float]:
    return 1.0001 + 1e-4 * i, 0.001 * (i + 1)


def wide_graph(lib, x):
    out = None
    for i in range(WIDE_BRANCHES):
        b = chain(x, WIDE_OPS // OPS_PER_CYCLE, lib.tanh, lib.exp, lib.log, *_branch_consts(i))
        out = b if out is None else out + b
    return out


def wide_numpy(seed, x):
    value = grad = None
    for i in range(WIDE_BRANCHES):
        v, g = numpy_chain(x, WIDE_OPS // OPS_PER_CYCLE, seed, *_branch_consts(i))
        value = v if value is None else value + v
        grad = g if grad is None else grad + g
    return value, {"x": grad}


# fan-out / fan-in: h = tanh(x) feeds 100 ops, whose results one op stacks, then summed

FAN_OUT = 100
FAN_CONSTS = [float(c) for c in np.linspace(-1.0, 1.0, FAN_OUT)]


def fan_graph(lib, x):
    h = lib.tanh(x)
    return lib.stack([lib.exp(h * c) for c in FAN_CONSTS]).sum(0)


def fan_numpy(seed, x):
    h = np.tanh(x)
    es = [np.exp(h * c) for c in FAN_CONSTS]
    value = np.stack(es).sum(0)
    gh = None
    for c, e in zip(FAN_CONSTS, es):        # h's adjoint accumulates over its 100 consumers
        term = seed * e * c
        gh = term if gh is None else gh + term
    return value, {"x": gh * (1 - h * h)}


# reductions with axes on a (64, 128) tensor

def reductions_graph(lib, x, a, b):
    m = x.mean(1, keepdim=True)
    xc = x - m
    v = (xc * xc).sum(0)
    mx = xc.amax(1)
    return (v * a).sum() + (mx * b).sum() + x.mean((0, 1))


def reductions_numpy(seed, x, a, b):
    rows = np.arange(x.shape[0])
    xc = x - x.mean(1, keepdims=True)
    v = (xc * xc).sum(0)
    am = xc.argmax(1)
    mx = xc[rows, am]
    value = (v * a).sum() + (mx * b).sum() + x.mean()
    gxc = 2 * xc * a
    gxc[rows, am] += b
    gx = gxc - gxc.mean(1, keepdims=True) + 1.0 / x.size
    return value, {"x": gx}


# indexing: gathered rows with repeats, a strided slice, element pairs with repeats

def indexing_graph(lib, x, idx, rows, cols, w):
    a = x[idx]
    s = x[::2, 4:12]
    c = x[rows, cols]
    return (lib.tanh(a) * w).sum() + (s * s).sum() + (c * c).sum()


def indexing_numpy(seed, x, idx, rows, cols, w):
    ta = np.tanh(x[idx])
    s = x[::2, 4:12]
    c = x[rows, cols]
    value = (ta * w).sum() + (s * s).sum() + (c * c).sum()
    gx = np.zeros_like(x)
    np.add.at(gx, idx, w * (1 - ta * ta))
    gx[::2, 4:12] += 2 * s
    np.add.at(gx, (rows, cols), 2 * c)
    return value, {"x": gx}


# softmax cross-entropy on (64, 10) logits

def cross_entropy_graph(lib, logits, target):
    return lib.nn.functional.cross_entropy(logits, target)


def numpy_cross_entropy(z, target):
    """(mean loss, d loss / d z) of softmax cross-entropy, the stable way."""
    rows = np.arange(z.shape[0])
    shifted = z - z.max(1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(1, keepdims=True)
    loss = (np.log(s[:, 0]) - shifted[rows, target]).mean()
    grad = e / s
    grad[rows, target] -= 1
    grad /= z.shape[0]
    return loss, grad


def cross_entropy_numpy(seed, logits, target):
    loss, grad = numpy_cross_entropy(logits, target)
    return loss, {"logits": grad}


def graph_cases(rounds_scale: float = 1.0) -> list[GraphCase]:
    """The graph workloads, with fixed inputs (seeded)."""
    def r(n):
        return max(1, round(n * rounds_scale))

    rng = np.random.default_rng(0)
    x64 = rng.uniform(-1.0, 1.0, 64)
    x256 = rng.uniform(-1.0, 1.0, 256)
    red = rng.standard_normal((64, 128))
    idx_x = rng.standard_normal((512, 16))
    return [
        GraphCase("wide", f"wide graph: {WIDE_BRANCHES} branches x {WIDE_OPS} ops, size 64",
                  {"x": x64}, {}, wide_graph, wide_numpy, seed=np.ones(64),
                  n_ops=WIDE_BRANCHES * WIDE_OPS + WIDE_BRANCHES - 1, rounds=r(50)),
        GraphCase("fanout", f"fan-out/fan-in: tanh(x) -> {FAN_OUT} x exp(h*c) -> stack.sum, "
                            f"size 256",
                  {"x": x256}, {}, fan_graph, fan_numpy, seed=np.ones(256),
                  n_ops=2 * FAN_OUT + 3, rounds=r(50)),
        GraphCase("reductions", "reductions: mean/sum/amax over axes of (64, 128)",
                  {"x": red}, {"a": rng.standard_normal(128), "b": rng.standard_normal(64)},
                  reductions_graph, reductions_numpy, rounds=r(100)),
        GraphCase("indexing", "indexing: x[idx] (repeats), x[::2, 4:12], x[rows, cols] "
                              "of (512, 16)",
                  {"x": idx_x},
                  {"idx": rng.integers(0, 512, 1024), "rows": rng.integers(0, 512, 2048),
                   "cols": rng.integers(0, 16, 2048), "w": rng.standard_normal((1024, 16))},
                  indexing_graph, indexing_numpy, rounds=r(100)),
        GraphCase("cross_entropy", "softmax cross-entropy: F.cross_entropy, (64, 10) float32",
                  {"logits": (3 * rng.standard_normal((64, 10))).astype(np.float32)},
                  {"target": rng.integers(0, 10, 64)},
                  cross_entropy_graph, cross_entropy_numpy, rtol=1e-5, atol=1e-7,
                  rounds=r(200)),
    ]


# -- second order: a Hessian-vector product against a gradient of the same function --------------
# hvp(x, v) = d/dx (grad f(x) . v): a create_graph=True sweep (recording the backward) then a
# sweep of that recorded backward.  Two functions: an elementwise tanh/exp one on a vector, and
# the MSE loss of a small Linear-tanh-Linear MLP in its parameters.  The interesting number is the
# ratio hvp time / gradient time (an HVP costs a small constant number of gradients).

HVP_SIZE = 1000
HVP_MLP = (32, 64, 1)
HVP_BATCH = 128


def hvp_elementwise(lib, x):
    """sum(exp(tanh(x)) * x): elementwise, so its Hessian is diagonal (checked by hand)."""
    return (lib.exp(lib.tanh(x)) * x).sum()


def hvp_elementwise_numpy(x, v):
    """(f, grad f, H v) of hvp_elementwise by hand."""
    t = np.tanh(x)
    e = np.exp(t)
    dt = 1 - t * t
    g = e * dt * x + e
    h = (e * dt * dt - 2 * e * t * dt) * x + 2 * e * dt
    return (e * x).sum(), g, h * v


def hvp_mlp_problem(seed: int = 0):
    """Parameters (W1, b1, W2, b2), data and a direction v, float64."""
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out = HVP_MLP
    shapes = [(n_hidden, n_in), (n_hidden,), (n_out, n_hidden), (n_out,)]
    params = [rng.uniform(-0.3, 0.3, s) for s in shapes]
    x = rng.standard_normal((HVP_BATCH, n_in))
    y = rng.standard_normal((HVP_BATCH, n_out))
    v = [rng.standard_normal(s) for s in shapes]
    return params, x, y, v


def hvp_mlp_loss(lib, params, x, y):
    w1, b1, w2, b2 = params
    F = lib.nn.functional
    return F.mse_loss(F.linear(lib.tanh(F.linear(x, w1, b1)), w2, b2), y)


def lib_gradient(lib, f, leaves):
    """The gradient of f(*leaves) (one plain sweep)."""
    return lib.autograd.grad(f(*leaves), leaves)


def lib_hvp(lib, f, leaves, vs):
    """H v for f at leaves: the gradient with create_graph=True, then the gradient of g . v."""
    gs = lib.autograd.grad(f(*leaves), leaves, create_graph=True)
    return lib.autograd.grad(gs, leaves, grad_outputs=vs)


@dataclass
class HvpCase:
    """One function, its point and direction, for timing grad and hvp (tapegrad, torch)."""
    id: str
    group: str
    arrays: list                  # the point (float64 arrays)
    vs: list                      # the direction
    fn: Callable                  # fn(lib, *leaves) -> scalar tensor
    numpy_hvp: Callable | None = None    # arrays, vs -> H v (a hand-written reference)

    def leaves(self, lib):
        return [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in self.arrays]

    def directions(self, lib):
        return [lib.tensor(v, dtype=lib.float64) for v in self.vs]

    def f(self, lib):
        return lambda *ts: self.fn(lib, *ts)

    def gradient(self, lib, leaves):
        return lib_gradient(lib, self.f(lib), leaves)

    def hvp(self, lib, leaves, vs):
        return lib_hvp(lib, self.f(lib), leaves, vs)

    def check(self, lib, rtol=1e-6) -> None:
        """lib's H v against central differences of lib's gradient along v (and the hand-written
        reference when there is one)."""
        hv = [h.numpy() for h in self.hvp(lib, self.leaves(lib), self.directions(lib))]
        eps = 1e-6

        def grad_at(sign):
            pts = [a + sign * eps * v for a, v in zip(self.arrays, self.vs)]
            ts = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in pts]
            return [g.numpy() for g in self.gradient(lib, ts)]

        for h, hi, lo in zip(hv, grad_at(1), grad_at(-1)):
            np.testing.assert_allclose(h, (hi - lo) / (2 * eps), rtol=rtol, atol=1e-7)
        if self.numpy_hvp is not None:
            np.testing.assert_allclose(hv[0], self.numpy_hvp(self.arrays, self.vs), rtol=1e-10)


def hvp_cases() -> list[HvpCase]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, HVP_SIZE)
    v = rng.standard_normal(HVP_SIZE)
    params, mx, my, mv = hvp_mlp_problem()
    n_in, n_hidden, n_out = HVP_MLP
    return [
        HvpCase("hvp_elementwise", f"hvp vs grad: sum(exp(tanh(x)) * x), {HVP_SIZE} float64",
                [x], [v], hvp_elementwise,
                lambda arrays, vs: hvp_elementwise_numpy(arrays[0], vs[0])[2]),
        HvpCase("hvp_mlp", f"hvp vs grad: MLP {n_in}-{n_hidden}-{n_out} tanh MSE loss, batch "
                           f"{HVP_BATCH}, float64",
                params, mv, lambda lib, *ps: hvp_mlp_loss(lib, ps, lib.tensor(mx),
                                                          lib.tensor(my))),
    ]


# -- MLP 784-256-10 training step (Linear, ReLU, Linear, CrossEntropyLoss, SGD) ------------------

MLP_SIZES = (784, 256, 10)
MLP_BATCH = 64
MLP_LR = 0.01
MLP_PARAMS = ("0.weight", "0.bias", "2.weight", "2.bias")    # nn.Sequential's names


def mlp_problem(seed: int = 0):
    """(initial parameters as in nn.Linear's default init, inputs x, labels y), float32."""
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out = MLP_SIZES
    k1, k2 = 1 / math.sqrt(n_in), 1 / math.sqrt(n_hidden)
    params = {
        "0.weight": rng.uniform(-k1, k1, (n_hidden, n_in)),
        "0.bias": rng.uniform(-k1, k1, n_hidden),
        "2.weight": rng.uniform(-k2, k2, (n_out, n_hidden)),
        "2.bias": rng.uniform(-k2, k2, n_out),
    }
    params = {k: v.astype(np.float32) for k, v in params.items()}
    x = rng.standard_normal((MLP_BATCH, n_in)).astype(np.float32)
    y = rng.integers(0, n_out, MLP_BATCH)
    return params, x, y


def numpy_mlp_step(p: dict[str, np.ndarray], x, y, lr=MLP_LR):
    """One SGD step by hand, updating `p` in place: (loss, {name: gradient})."""
    w1, b1, w2, b2 = (p[k] for k in MLP_PARAMS)
    h = x @ w1.T + b1
    r = np.maximum(h, 0)
    z = r @ w2.T + b2
    loss, dz = numpy_cross_entropy(z, y)
    dw2 = dz.T @ r
    db2 = dz.sum(0)
    dh = dz @ w2
    dh *= h > 0
    dw1 = dh.T @ x
    db1 = dh.sum(0)
    grads = dict(zip(MLP_PARAMS, (dw1, db1, dw2, db2)))
    for k, g in grads.items():
        p[k] -= lr * g
    return loss, grads


def lib_mlp(lib, params: dict[str, np.ndarray], lr=MLP_LR):
    """(model, loss_fn, optimizer) in `lib`, the model holding a copy of `params`."""
    nn = lib.nn
    n_in, n_hidden, n_out = MLP_SIZES
    model = nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Linear(n_hidden, n_out))
    with lib.no_grad():
        for name, p in model.named_parameters():
            p.copy_(lib.from_numpy(params[name]))
    return model, nn.CrossEntropyLoss(), lib.optim.SGD(model.parameters(), lr=lr)


def lib_mlp_step(model, loss_fn, opt, x, y):
    """One training step the way a PyTorch script writes it."""
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def compiled_mlp_step(forward, opt, x, y):
    """One training step with the model and loss in one (tapegrad.compile'd) call `forward`."""
    opt.zero_grad()
    loss = forward(x, y)
    loss.backward()
    opt.step()
    return loss


def check_mlp_step(lib, rtol=1e-5, atol=1e-6) -> None:
    """One step of `lib` from the shared initial weights equals the numpy step: same loss, same
    gradients, same updated weights."""
    params, x, y = mlp_problem()
    model, loss_fn, opt = lib_mlp(lib, params)
    want = {k: v.copy() for k, v in params.items()}
    loss_ref, grads_ref = numpy_mlp_step(want, x, y)
    loss = lib_mlp_step(model, loss_fn, opt, lib.from_numpy(x), lib.from_numpy(y))
    np.testing.assert_allclose(loss.item(), loss_ref, rtol=rtol)
    for name, p in model.named_parameters():
        assert p.dtype == lib.float32
        np.testing.assert_allclose(p.grad.numpy(), grads_ref[name], rtol=rtol, atol=atol,
                                   err_msg=f"MLP gradient of {name}")
        np.testing.assert_allclose(p.detach().numpy(), want[name], rtol=rtol, atol=atol,
                                   err_msg=f"MLP updated {name}")


# -- cubic polynomial fit of sin (the PyTorch autograd tutorial), per iteration --------------------

POLY_POINTS = 2000
POLY_LR = 1e-6


def poly_problem(seed: int = 0):
    """x in [-pi, pi] (2,000 points), y = sin(x), initial (a, b, c, d); float32 as the tutorial."""
    x = np.linspace(-math.pi, math.pi, POLY_POINTS, dtype=np.float32)
    coeffs = np.random.default_rng(seed).standard_normal(4).astype(np.float32)
    return x, np.sin(x), coeffs


def numpy_poly_iteration(c: np.ndarray, x, y, lr=POLY_LR):
    """The tutorial's numpy version: forward, hand-written gradients, update `c` in place."""
    a, b, cc, d = c
    y_pred = a + b * x + cc * x ** 2 + d * x ** 3
    loss = np.square(y_pred - y).sum()
    grad_y_pred = 2.0 * (y_pred - y)
    grads = np.array([grad_y_pred.sum(), (grad_y_pred * x).sum(),
                      (grad_y_pred * x ** 2).sum(), (grad_y_pred * x ** 3).sum()], np.float32)
    c -= lr * grads
    return loss, grads


def lib_poly_params(lib, coeffs):
    return [lib.tensor(float(v), dtype=lib.float32, requires_grad=True) for v in coeffs]


def lib_poly_forward(params, x, y):
    a, b, c, d = params
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    return (y_pred - y).pow(2).sum()


def lib_poly_update(lib, params, lr=POLY_LR):
    """Manual SGD under no_grad, then zero the grads (the tutorial: `a.grad = None`)."""
    grads = [p.grad for p in params]
    with lib.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return grads


def lib_poly_iteration(lib, params, x, y, lr=POLY_LR, forward=lib_poly_forward):
    """One iteration: forward (`forward`: lib_poly_forward or a compiled one), backward, update."""
    loss = forward(params, x, y)
    loss.backward()
    return loss, lib_poly_update(lib, params, lr)


def check_poly(lib, iterations: int = 3, rtol=1e-4) -> None:
    """A few iterations of `lib` equal the numpy version's: losses, gradients, coefficients."""
    x, y, coeffs = poly_problem()
    c = coeffs.copy()
    params = lib_poly_params(lib, coeffs)
    tx, ty = lib.from_numpy(x), lib.from_numpy(y)
    for _ in range(iterations):
        loss_ref, grads_ref = numpy_poly_iteration(c, x, y)
        loss, grads = lib_poly_iteration(lib, params, tx, ty)
        np.testing.assert_allclose(loss.item(), loss_ref, rtol=rtol)
        np.testing.assert_allclose([g.item() for g in grads], grads_ref, rtol=rtol,
                                   atol=1e-3 * np.abs(grads_ref).max())
        np.testing.assert_allclose([p.item() for p in params], c, rtol=1e-6)
        assert all(p.grad is None and p.is_leaf and p.requires_grad for p in params)


# -- footprints: import time and peak RSS ----------------------------------------------------------

def _package_parent() -> str:
    """The directory to put on PYTHONPATH so that a subprocess imports this very tapegrad."""
    here = os.path.dirname(os.path.abspath(__file__))      # .../tapegrad
    return os.path.dirname(here)


def _ensure_bytecode() -> None:
    """Compile this tapegrad's modules to bytecode, as `pip install` does, before a footprint probe.

    The footprints compare libraries as installed: numpy's site-packages holds its .pyc files.  A
    source checkout run where PYTHONDONTWRITEBYTECODE=1 (these machines set it) would instead
    parse every tapegrad module in every probe, and the parser's transient memory (about 1 MiB of
    heap that glibc keeps) would be counted as the MLP step's.  compileall writes __pycache__
    next to the sources whatever that variable says; where it cannot write (a read-only install)
    the bytecode pip wrote is used.
    """
    import compileall
    compileall.compile_dir(os.path.dirname(os.path.abspath(__file__)), quiet=2)


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_parent(), env.get("PYTHONPATH"))
                                        if p)
    for var in THREAD_VARS:
        env.setdefault(var, "1")
    return env


def import_times(repeat: int = 5, modules=("numpy", "tapegrad")) -> dict[str, float]:
    """Median wall time (s) of `python -c "import M"` in a fresh interpreter, per module, and of
    `python -c "pass"` (key "python": the interpreter's own start-up).  Runs are interleaved."""
    stmts = {"python": "pass", **{m: f"import {m}" for m in modules}}
    _ensure_bytecode()
    env = _subprocess_env()
    times: dict[str, list[float]] = {k: [] for k in stmts}
    for _ in range(repeat):
        for key, stmt in stmts.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", stmt], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            times[key].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def rss_probe(mode: str, steps: int) -> None:
    """Run in a fresh interpreter: `steps` MLP steps with `mode` (numpy, tapegrad, torch); print
    JSON with ru_maxrss (KiB on Linux) after setup and after the steps, and a weights checksum."""
    import resource

    def maxrss():
        # VmHWM: this process's own high-water mark.  ru_maxrss is not usable for this on Linux:
        # a child started by vfork+exec (subprocess) keeps the larger of its own peak and its
        # launcher's, so every probe launched from a big pytest/torch process reports the same.
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])            # kB
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KiB on Linux, B on macOS

    params, x, y = mlp_problem()
    if mode == "numpy":
        setup_rss = maxrss()
        for _ in range(steps):
            numpy_mlp_step(params, x, y)
        final = params
    else:
        if mode == "torch":
            import torch as lib
            set_torch_threads(lib)
        else:
            import tapegrad as lib
        model, loss_fn, opt = lib_mlp(lib, params)
        tx, ty = lib.from_numpy(x), lib.from_numpy(y)
        setup_rss = maxrss()
        for _ in range(steps):
            lib_mlp_step(model, loss_fn, opt, tx, ty)
        final = {k: p.detach().numpy() for k, p in model.named_parameters()}
    print(json.dumps({"mode": mode, "steps": steps, "setup_kib": setup_rss,
                      "peak_kib": maxrss(),
                      "checksum": [float(np.abs(final[k]).astype(np.float64).sum())
                                   for k in MLP_PARAMS]}))


_PROBE = ("import runpy, sys; "
          "runpy.run_path(sys.argv[1], run_name='tapegrad_bench_probe')['rss_probe']"
          "(sys.argv[2], int(sys.argv[3]))")


def peak_rss(modes=("numpy", "tapegrad"), steps: int = 10) -> dict[str, dict]:
    """Peak RSS of `steps` MLP training steps per mode, each in its own fresh interpreter.

    This file runs as a script there (runpy), so the numpy probe imports numpy only, not tapegrad.
    Both libraries are imported from bytecode (`_ensure_bytecode`).
    """
    out = {}
    _ensure_bytecode()
    for mode in modes:
        run = subprocess.run([sys.executable, "-c", _PROBE, os.path.abspath(__file__), mode,
                              str(steps)], env=_subprocess_env(), check=True,
                             capture_output=True, text=True)
        out[mode] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


# -- ops that scripts call and that were far slower than PyTorch (perf46) ------------------------

@dataclass
class SlowOpCase:
    """One op at a size scripts use: arrays() -> numpy inputs (made once); numpy(*arrays): the
    floor (numpy's nearest call, not always the same answer among ties); call(lib, *tensors):
    the op, forward only, or forward and backward when grad (the first tensor requires grad; an
    int: that many leading tensors do)."""
    arrays: Callable[[], tuple]
    numpy: Callable[..., Any]
    call: Callable[..., Any]
    grad: bool | int = False


def _slow_rng():
    return np.random.default_rng(46)


def _ties(shape, dtype=np.float32):
    return lambda: (_slow_rng().integers(0, 10, shape).astype(dtype),)


def _scatter_arrays(n, bins, dtype=np.float32):
    def make():
        rng = _slow_rng()
        return (np.zeros(bins, dtype), rng.integers(0, bins, n),
                rng.standard_normal(n).astype(dtype))
    return make


def _segments(n, segments):
    def make():
        return (_slow_rng().standard_normal(n).astype(np.float32),
                np.full(segments, n // segments))
    return make


def _buckets(n_boundaries, n_values):
    def make():
        rng = _slow_rng()
        return (np.sort(rng.standard_normal(n_boundaries)).astype(np.float32),
                rng.standard_normal(n_values).astype(np.float32))
    return make


def _index_add_arrays():
    rng = _slow_rng()
    return (rng.standard_normal((256, 512)).astype(np.float32), rng.integers(0, 256, 1000),
            rng.standard_normal((1000, 512)).astype(np.float32))


def _kth_backward(lib, x):
    lib.kthvalue(x, 3, 1).values.sum().backward()


def _scatter_add_backward(lib, z, index, src):
    lib.scatter_add(z, 0, index, src).sum().backward()


def _segment_sum_backward(lib, x, lengths):
    lib.segment_reduce(x, "sum", lengths=lengths).sum().backward()


def _grid_arrays(shape, dtype=np.float32, spread=1.1):
    """An input (N, C, H, W) and a grid (N, H, W, 2) reaching a little outside [-1, 1]."""
    def make():
        rng = _slow_rng()
        n, _, h, w = shape
        return (rng.standard_normal(shape).astype(dtype),
                rng.uniform(-spread, spread, (n, h, w, 2)).astype(dtype))
    return make


def _numpy_bilinear(x, grid):
    """The floor of grid_sample (bilinear, zeros padding, align_corners=False): four takes."""
    n, c, h, w = x.shape
    gx = (grid[..., 0] + 1) * (w / 2) - 0.5
    gy = (grid[..., 1] + 1) * (h / 2) - 0.5
    x0, y0 = np.floor(gx), np.floor(gy)
    tx, ty = gx - x0, gy - y0
    planes = x.reshape(n, c, h * w)
    out = 0
    for dy, wy in ((0, 1 - ty), (1, ty)):
        for dx, wx in ((0, 1 - tx), (1, tx)):
            xi, yi = x0 + dx, y0 + dy
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            flat = np.where(inside, yi * w + xi, 0).astype(np.int64).reshape(n, 1, -1)
            vals = np.take_along_axis(planes, np.broadcast_to(flat, (n, c, flat.shape[2])), 2)
            out = out + vals.reshape(n, c, *gx.shape[1:]) * (wx * wy * inside)[:, None]
    return out


def _grid_sample_backward(lib, x, grid, **kw):
    lib.nn.functional.grid_sample(x, grid, align_corners=False, **kw).sum().backward()


def _sum_backward(op):
    def run(lib, *tensors):
        op(lib, *tensors).sum().backward()
    return run


def _vectors(n, count):
    return lambda: tuple(_slow_rng().standard_normal((count, n)).astype(np.float32))


def _windows(x, size, step):
    return np.lib.stride_tricks.sliding_window_view(x, size, axis=-1)[..., ::step, :].copy()


SLOW_OP_CASES: dict[str, SlowOpCase] = {
    # perf47: grid_sample's C kernels, histogram's bins in C, and ops whose Python preamble or
    # composition dominated at script sizes
    "grid_sample bilinear (8,3,32,32) f32": SlowOpCase(
        _grid_arrays((8, 3, 32, 32)), _numpy_bilinear,
        lambda lib, x, g: lib.nn.functional.grid_sample(x, g, align_corners=False)),
    "grid_sample bilinear (8,3,32,32) f32 + backward (input, grid)": SlowOpCase(
        _grid_arrays((8, 3, 32, 32)), _numpy_bilinear, _grid_sample_backward, grad=2),
    "grid_sample bilinear (8,3,32,32) f64 + backward (input, grid)": SlowOpCase(
        _grid_arrays((8, 3, 32, 32), np.float64), _numpy_bilinear, _grid_sample_backward,
        grad=2),
    "grid_sample nearest border (8,3,32,32) f32": SlowOpCase(
        _grid_arrays((8, 3, 32, 32)), _numpy_bilinear,
        lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="nearest",
                                                        padding_mode="border",
                                                        align_corners=False)),
    "grid_sample reflection (4,16,64,64) f32 + backward (input, grid)": SlowOpCase(
        _grid_arrays((4, 16, 64, 64), spread=2.0), _numpy_bilinear,
        lambda lib, x, g: _grid_sample_backward(lib, x, g, padding_mode="reflection"), grad=2),
    "grid_sample trilinear (2,4,16,16,16) f32 + backward (input, grid)": SlowOpCase(
        lambda: (_slow_rng().standard_normal((2, 4, 16, 16, 16)).astype(np.float32),
                 _slow_rng().uniform(-1.1, 1.1, (2, 16, 16, 16, 3)).astype(np.float32)),
        lambda x, g: np.take(x, np.zeros(g.shape[:-1], np.int64)),
        _grid_sample_backward, grad=2),
    "histogram 1e4 bins=100 f32": SlowOpCase(
        lambda: (_slow_rng().standard_normal(10000).astype(np.float32),),
        lambda x: np.histogram(x, 100), lambda lib, x: lib.histogram(x, bins=100)),
    "histogram 1e5 bins=10 f64": SlowOpCase(
        lambda: (_slow_rng().standard_normal(100000),),
        lambda x: np.histogram(x, 10), lambda lib, x: lib.histogram(x, bins=10)),
    "diag (100,) -> (100,100) f32": SlowOpCase(
        lambda: (_slow_rng().standard_normal(100).astype(np.float32),), np.diag,
        lambda lib, x: lib.diag(x)),
    "diag_embed (32,64) f32 + backward": SlowOpCase(
        lambda: (_slow_rng().standard_normal((32, 64)).astype(np.float32),),
        lambda x: x[..., None] * np.eye(64, dtype=x.dtype),
        _sum_backward(lambda lib, x: lib.diag_embed(x) * 2), grad=True),
    "unfold(0,16,4).contiguous() 4096 f32": SlowOpCase(
        lambda: (_slow_rng().standard_normal(4096).astype(np.float32),),
        lambda x: _windows(x, 16, 4), lambda lib, x: x.unfold(0, 16, 4).contiguous()),
    "stack 64 x (16,) f32": SlowOpCase(
        _vectors(16, 64), lambda *xs: np.stack(xs), lambda lib, *xs: lib.stack(xs)),
    # session 48: cat's dense path, unfold's windows as its gradient's record, topk's rows in C
    "cat 64 x (16,) f32": SlowOpCase(
        _vectors(16, 64), lambda *xs: np.concatenate(xs), lambda lib, *xs: lib.cat(xs)),
    "unfold(1,8,1).contiguous() (32,256) f32 + backward": SlowOpCase(
        lambda: (_slow_rng().standard_normal((32, 256)).astype(np.float32),),
        lambda x: _windows(x, 8, 1),
        _sum_backward(lambda lib, x: x.unfold(1, 8, 1).contiguous()), grad=True),
    "topk 5 of (64,128) f32": SlowOpCase(
        lambda: (_slow_rng().standard_normal((64, 128)).astype(np.float32),),
        lambda x: np.sort(np.partition(x, 123, axis=1)[:, 123:], axis=1),
        lambda lib, x: lib.topk(x, 5, 1)),
    "one_hot (32,128) classes=100": SlowOpCase(
        lambda: (_slow_rng().integers(0, 100, (32, 128)),),
        lambda i: np.eye(100, dtype=np.int64)[i],
        lambda lib, i: lib.nn.functional.one_hot(i, 100)),
    "affine_grid (8,2,3) -> (8,3,32,32) f32": SlowOpCase(
        lambda: (_slow_rng().standard_normal((8, 2, 3)).astype(np.float32),),
        lambda t: np.matmul(np.ones((1, 1024, 3), np.float32), t.swapaxes(1, 2)),
        lambda lib, t: lib.nn.functional.affine_grid(t, (8, 3, 32, 32), align_corners=False)),
    "interpolate bilinear (4,16,32,32)->64 f32 + backward": SlowOpCase(
        lambda: (_slow_rng().standard_normal((4, 16, 32, 32)).astype(np.float32),),
        lambda x: x.repeat(2, -1).repeat(2, -2),
        _sum_backward(lambda lib, x: lib.nn.functional.interpolate(
            x, size=(64, 64), mode="bilinear", align_corners=False) * 2), grad=True),
    "F.unfold (8,3,32,32) k=3 p=1 f32 + backward": SlowOpCase(
        lambda: (_slow_rng().standard_normal((8, 3, 32, 32)).astype(np.float32),),
        lambda x: _windows(x, 3, 1),
        _sum_backward(lambda lib, x: lib.nn.functional.unfold(x, 3, padding=1) * 2), grad=True),
    "cdist (100,3) x (200,3) f32 + backward": SlowOpCase(
        lambda: tuple(_slow_rng().standard_normal((2, 200, 3)).astype(np.float32)),
        lambda a, b: np.sqrt(((a[:100, None] - b[None]) ** 2).sum(-1)),
        _sum_backward(lambda lib, a, b: lib.cdist(a[:100], b)), grad=True),
    "scatter_add 100 into 10 f32": SlowOpCase(
        _scatter_arrays(100, 10), lambda z, i, s: np.add.at(z.copy(), i, s),
        lambda lib, z, i, s: lib.scatter_add(z, 0, i, s)),
    # perf46

    "kthvalue ties (100,1000) dim=1 k=3 f32": SlowOpCase(
        _ties((100, 1000)), lambda a: np.partition(a, 2, axis=1)[:, 2],
        lambda lib, x: lib.kthvalue(x, 3, 1)),
    "kthvalue ties (1000,100) dim=0 k=3 i64": SlowOpCase(
        _ties((1000, 100), np.int64), lambda a: np.partition(a, 2, axis=0)[2],
        lambda lib, x: lib.kthvalue(x, 3, 0)),
    "kthvalue ties 1e4 median rank f64": SlowOpCase(
        _ties((10000,), np.float64), lambda a: np.partition(a, 4999)[4999],
        lambda lib, x: lib.kthvalue(x, 5000)),
    "kthvalue ties (100,1000) dim=1 f32 + backward": SlowOpCase(
        _ties((100, 1000)), lambda a: np.partition(a, 2, axis=1)[:, 2], _kth_backward,
        grad=True),
    "scatter_add 1e4 into 1e3 f32": SlowOpCase(
        _scatter_arrays(10000, 1000), lambda z, i, s: np.add.at(z.copy(), i, s),
        lambda lib, z, i, s: lib.scatter_add(z, 0, i, s)),
    "scatter_add 1e6 into 1e5 f32": SlowOpCase(
        _scatter_arrays(1000000, 100000), lambda z, i, s: np.add.at(z.copy(), i, s),
        lambda lib, z, i, s: lib.scatter_add(z, 0, i, s)),
    "scatter_add 1e4 into 1e3 f32 + backward": SlowOpCase(
        _scatter_arrays(10000, 1000), lambda z, i, s: np.add.at(z.copy(), i, s),
        _scatter_add_backward, grad=True),
    "index_add (256,512) dim=0, 1000 rows f32": SlowOpCase(
        _index_add_arrays, lambda x, i, s: np.add.at(x.copy(), i, s),
        lambda lib, x, i, s: x.index_add(0, i, s)),
    "index_put accumulate (256,512), 1000 rows f32": SlowOpCase(
        _index_add_arrays, lambda x, i, s: np.add.at(x.copy(), i, s[0]),
        lambda lib, x, i, s: x.index_put((i,), s[0], accumulate=True)),
    "segment_reduce sum 1e4, 100 segments f32": SlowOpCase(
        _segments(10000, 100), lambda x, n: np.add.reduceat(x, np.r_[0, np.cumsum(n)[:-1]]),
        lambda lib, x, n: lib.segment_reduce(x, "sum", lengths=n)),
    "segment_reduce max 1e6, 1000 segments f32": SlowOpCase(
        _segments(1000000, 1000),
        lambda x, n: np.maximum.reduceat(x, np.r_[0, np.cumsum(n)[:-1]]),
        lambda lib, x, n: lib.segment_reduce(x, "max", lengths=n)),
    "segment_reduce sum 1e4, 100 segments f32 + backward": SlowOpCase(
        _segments(10000, 100), lambda x, n: np.add.reduceat(x, np.r_[0, np.cumsum(n)[:-1]]),
        _segment_sum_backward, grad=True),
    "bucketize 1e4 values, 100 boundaries f32": SlowOpCase(
        _buckets(100, 10000), lambda b, v: np.searchsorted(b, v),
        lambda lib, b, v: lib.bucketize(v, b)),
    "searchsorted 100 values, 1000 boundaries f32": SlowOpCase(
        _buckets(1000, 100), lambda b, v: np.searchsorted(b, v),
        lambda lib, b, v: lib.searchsorted(b, v)),
    "searchsorted 1e6 values, 1000 boundaries f32": SlowOpCase(
        _buckets(1000, 1000000), lambda b, v: np.searchsorted(b, v),
        lambda lib, b, v: lib.searchsorted(b, v)),
}


def slow_op_tensors(case: SlowOpCase, lib) -> tuple:
    """The case's arrays as `lib` tensors (the first requiring grad when the case runs
    backward: a fresh leaf per call, so .grad never accumulates across rounds)."""
    arrays = case.arrays()
    tensors = [lib.from_numpy(a.copy()) for a in arrays]
    for t in tensors[:int(case.grad)]:
        t.requires_grad_(True)
    return (lib, *tensors)


def slow_op_contenders(name: str, libs) -> dict[str, Contender]:
    """numpy's floor and each library's call of SLOW_OP_CASES[name] (setup untimed)."""
    case = SLOW_OP_CASES[name]
    arrays = case.arrays()
    ways = {"numpy": Contender(lambda: arrays, case.numpy)}
    for lib_name, lib in libs.items():
        ways[lib_name] = Contender(lambda lib=lib: slow_op_tensors(case, lib), case.call)
    return ways


# -- the command-line benchmark ------------------------------------------------------------------

@dataclass
class Contender:
    """One way to run a workload: setup() -> args (untimed), run(*args) (timed), check()."""
    setup: Callable[[], tuple]
    run: Callable[..., Any]


def _graph_contenders(case: GraphCase, libs: dict[str, Any]) -> dict[str, Contender]:
    ways = {"numpy": Contender(lambda: (), case.reference)}
    for name, lib in libs.items():
        ways[name] = Contender(lambda lib=lib: (lib, case.tensors(lib)), case.total)
    return ways


def _check_graph(case: GraphCase, libs: dict[str, Any]) -> None:
    _, ref = case.reference()
    for name, lib in libs.items():
        case.check(case.total(lib, case.tensors(lib)), ref,
                   rtol=None if name == "tapegrad" else max(case.rtol, 1e-9))


def _chain_case(size: int, n_ops: int) -> GraphCase:
    x0 = np.random.default_rng(0).uniform(-1.0, 1.0, size)
    cycles = n_ops // OPS_PER_CYCLE

    def graph(lib, x):
        return chain(x, cycles, lib.tanh, lib.exp, lib.log)

    def reference(seed, x):
        value, grad = numpy_chain(x, cycles, seed)
        return value, {"x": grad}

    return GraphCase(f"chain{size}", f"chain {n_ops} ops, size {size}, float64", {"x": x0}, {},
                     graph, reference, seed=np.ones(size), n_ops=n_ops)


def mlp_contenders(libs, compiled: bool = False) -> dict[str, Contender]:
    """The MLP step of numpy and of each library in `libs`; with `compiled`, also tapegrad's with
    the model and loss in one tapegrad.compile'd call ("tapegrad replay")."""
    params, x, y = mlp_problem()
    np_params = {k: v.copy() for k, v in params.items()}
    ways = {"numpy": Contender(lambda: (np_params, x, y), numpy_mlp_step)}
    for name, lib in libs.items():
        state = lib_mlp(lib, params) + (lib.from_numpy(x), lib.from_numpy(y))
        ways[name] = Contender(lambda state=state: state, lib_mlp_step)
    if compiled and "tapegrad" in libs:
        tg = libs["tapegrad"]
        model, loss_fn, opt = lib_mlp(tg, params)
        forward = tg.compile(lambda a, b: loss_fn(model(a), b))
        state = (forward, opt, tg.from_numpy(x), tg.from_numpy(y))
        ways["tapegrad replay"] = Contender(lambda: state, compiled_mlp_step)
    return ways


def poly_contenders(libs, compiled: bool = False) -> dict[str, Contender]:
    """The polynomial-fit iteration of numpy and of each library in `libs`; with `compiled`, also
    tapegrad's with the forward tapegrad.compile'd ("tapegrad replay")."""
    x, y, coeffs = poly_problem()
    c = coeffs.copy()
    ways = {"numpy": Contender(lambda: (c, x, y), numpy_poly_iteration)}
    for name, lib in libs.items():
        state = (lib, lib_poly_params(lib, coeffs), lib.from_numpy(x), lib.from_numpy(y))
        ways[name] = Contender(lambda state=state: state, lib_poly_iteration)
    if compiled and "tapegrad" in libs:
        tg = libs["tapegrad"]
        state = (tg, lib_poly_params(tg, coeffs), tg.from_numpy(x), tg.from_numpy(y), POLY_LR,
                 tg.compile(lib_poly_forward))
        ways["tapegrad replay"] = Contender(lambda: state, lib_poly_iteration)
    return ways


# -- a hand-written Adam update --------------------------------------------------------------------
# The optimizer step as tutorials write it by hand, one parameter at a time, with the in-place
# methods (mul_, add_, addcmul_, addcdiv_, sqrt, lerp_) under no_grad: per-op cost on small
# tensors, the parameters of a 4-32-32-3 MLP in float32.  No autograd: gradients are fixed.
HAND_ADAM_SHAPES = [(32, 4), (32,), (32, 32), (32,), (3, 32), (3,)]
HAND_ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


def hand_adam_problem():
    """Parameters and gradients (numpy float32), seeded."""
    rng = np.random.default_rng(7)
    params = [rng.standard_normal(s).astype(np.float32) for s in HAND_ADAM_SHAPES]
    grads = [rng.standard_normal(s).astype(np.float32) for s in HAND_ADAM_SHAPES]
    return params, grads


def numpy_hand_adam_step(params, grads, ms, vs, step):
    """The step in numpy, in the order the library version computes it."""
    lr, b1, b2, eps = (HAND_ADAM[k] for k in ("lr", "beta1", "beta2", "eps"))
    step[0] += 1
    c1, c2 = 1 - b1 ** step[0], 1 - b2 ** step[0]
    for p, g, m, v in zip(params, grads, ms, vs):
        m += (g - m) * np.float32(1 - b1)                   # lerp_ (weight < 0.5)
        v *= np.float32(b2)
        v += np.float32(1 - b2) * (g * g)                   # addcmul_
        denom = np.sqrt(v) / np.float32(math.sqrt(c2)) + np.float32(eps)
        p += np.float32(-lr / c1) * (m / denom)             # addcdiv_


def lib_hand_adam_step(lib, params, grads, ms, vs, step):
    """The step as a user writes it with `lib`'s tensors."""
    lr, b1, b2, eps = (HAND_ADAM[k] for k in ("lr", "beta1", "beta2", "eps"))
    step[0] += 1
    c1, c2 = 1 - b1 ** step[0], 1 - b2 ** step[0]
    with lib.no_grad():
        for p, g, m, v in zip(params, grads, ms, vs):
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / math.sqrt(c2)).add_(eps)
            p.addcdiv_(m, denom, value=-lr / c1)


def _hand_adam_state(lib=None):
    params, grads = hand_adam_problem()
    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    if lib is not None:
        params = [lib.tensor(p, requires_grad=True) for p in params]
        grads, ms, vs = ([lib.tensor(a) for a in arrays] for arrays in (grads, ms, vs))
    return params, grads, ms, vs, [0]


def hand_adam_contenders(libs) -> dict[str, Contender]:
    """The hand-written Adam step of numpy and of each library in `libs`."""
    ref = _hand_adam_state()
    ways = {"numpy": Contender(lambda: ref, numpy_hand_adam_step)}
    for name, lib in libs.items():
        state = (lib,) + _hand_adam_state(lib)
        ways[name] = Contender(lambda state=state: state, lib_hand_adam_step)
    return ways


def check_hand_adam(lib, steps: int = 3, rtol=1e-6) -> None:
    """A few steps of `lib` give the numpy version's parameters and moments."""
    ref, mine = _hand_adam_state(), _hand_adam_state(lib)
    for _ in range(steps):
        numpy_hand_adam_step(*ref)
        lib_hand_adam_step(lib, *mine)
    for arrays, tensors in zip(ref[:4], mine[:4]):
        for a, t in zip(arrays, tensors):
            np.testing.assert_allclose(t.detach().numpy(), a, rtol=rtol, atol=1e-7)


# -- evaluation metrics: the reductions a training script prints ---------------------------------

METRICS_SHAPE = (64, 10)


def metrics_problem():
    """A batch of predictions and targets (numpy float32), seeded."""
    rng = np.random.default_rng(11)
    return tuple(rng.standard_normal(METRICS_SHAPE).astype(np.float32) for _ in range(2))


def numpy_metrics(pred, target):
    """MSE, MAE, per-output means and per-sample sums, as a numpy script computes them."""
    err = pred - target
    return (float((err * err).mean()), float(np.abs(err).mean()), pred.mean(0), pred.sum(1))


def lib_metrics(lib, pred, target):
    """The same metrics as a user writes them with `lib`'s tensors."""
    with lib.no_grad():
        err = pred - target
        return ((err ** 2).mean().item(), err.abs().mean().item(), pred.mean(0), pred.sum(1))


def metrics_contenders(libs) -> dict[str, Contender]:
    """The metrics of numpy and of each library in `libs`."""
    pred, target = metrics_problem()
    ways = {"numpy": Contender(lambda: (pred, target), numpy_metrics)}
    for name, lib in libs.items():
        tensors = (lib, lib.tensor(pred), lib.tensor(target))
        ways[name] = Contender(lambda tensors=tensors: tensors, lib_metrics)
    return ways


def check_metrics(lib, rtol=1e-5) -> None:
    """`lib` computes the numpy version's metrics."""
    pred, target = metrics_problem()
    ref = numpy_metrics(pred, target)
    mine = lib_metrics(lib, lib.tensor(pred), lib.tensor(target))
    np.testing.assert_allclose(mine[:2], ref[:2], rtol=rtol)
    for t, a in zip(mine[2:], ref[2:]):
        np.testing.assert_allclose(t.numpy(), a, rtol=rtol, atol=1e-6)


# -- tensor factories and scalar reads: a script's per-step small calls --------------------------

_FACTORIES_RNG = np.random.default_rng(45)


def numpy_factories(x):
    """numpy's counterparts of lib_factories' calls (the floor: allocation and fill only)."""
    rng = _FACTORIES_RNG
    return (np.zeros((3, 4), np.float32), np.ones((3, 4), np.float32),
            rng.standard_normal((3, 4)).astype(np.float32), rng.random((3, 4)).astype(np.float32),
            rng.integers(0, 10, (3, 4)), np.arange(10), np.full((3, 4), 2.0, np.float32),
            np.array(2.5, np.float32), np.array([1.0, 2.0, 3.0], np.float32),
            np.eye(3, dtype=np.float32), np.linspace(0, 1, 5, dtype=np.float32),
            np.zeros_like(x), np.empty((3, 4), np.float32), float(x[0, 0]), x.shape)


def lib_factories(lib, x):
    """The factory calls and scalar reads of a small script's step, in `lib`."""
    return (lib.zeros(3, 4), lib.ones((3, 4)), lib.randn(3, 4, requires_grad=True),
            lib.rand(3, 4), lib.randint(0, 10, (3, 4)), lib.arange(10), lib.full((3, 4), 2.0),
            lib.tensor(2.5), lib.tensor([1.0, 2.0, 3.0]), lib.eye(3), lib.linspace(0, 1, 5),
            lib.zeros_like(x), lib.empty(3, 4), float(x[0, 0]), x.shape)


def factories_contenders(libs) -> dict[str, Contender]:
    """The factories block of numpy and of each library in `libs`."""
    ways = {"numpy": Contender(lambda: (np.ones((3, 4), np.float32),), numpy_factories)}
    for name, lib in libs.items():
        ways[name] = Contender(lambda lib=lib: (lib, lib.ones(3, 4)), lib_factories)
    return ways


def cli_workloads(libs: dict[str, Any]):
    """(row label, n_ops or None, contenders, check) for the command-line run."""
    cases = {c.id: c for c in graph_cases()}
    rows = []
    for size in (1, 4096):
        case = _chain_case(size, 300)
        rows.append((case.group, case.n_ops, lambda case=case: _graph_contenders(case, libs),
                     lambda case=case: _check_graph(case, libs)))
    wide = cases["wide"]
    rows.append((f"wide graph {WIDE_BRANCHES}x{WIDE_OPS} ops, size 64, float64", wide.n_ops,
                 lambda: _graph_contenders(wide, libs), lambda: _check_graph(wide, libs)))
    rows.append(("MLP 784-256-10 SGD step, batch 64, float32", None,
                 lambda: mlp_contenders(libs),
                 lambda: [check_mlp_step(lib) for lib in libs.values()]))
    rows.append((f"poly fit of sin, {POLY_POINTS} points, per iteration", None,
                 lambda: poly_contenders(libs),
                 lambda: [check_poly(lib) for lib in libs.values()]))
    rows.append(("hand-written Adam step, 4-32-32-3 MLP, f32", None,
                 lambda: hand_adam_contenders(libs),
                 lambda: [check_hand_adam(lib) for lib in libs.values()]))
    rows.append(("eval metrics, (64, 10) f32", None,
                 lambda: metrics_contenders(libs),
                 lambda: [check_metrics(lib) for lib in libs.values()]))
    hvp = hvp_cases()[0]
    rows.append((f"Hessian-vector product, tanh/exp, {HVP_SIZE}", None,
                 lambda: _hvp_contenders(hvp, libs),
                 lambda: [hvp.check(lib) for lib in libs.values()]))
    return rows


def _hvp_contenders(case: HvpCase, libs) -> dict[str, Contender]:
    """numpy: the hand-written H v; each library: its H v, and (" grad") its gradient alone."""
    ways = {"numpy": Contender(lambda: (case.arrays, case.vs), case.numpy_hvp)}
    for name, lib in libs.items():
        ways[name] = Contender(lambda lib=lib: (lib, case.leaves(lib), case.directions(lib)),
                               case.hvp)
        ways[name + " grad"] = Contender(lambda lib=lib: (lib, case.leaves(lib)), case.gradient)
    return ways


def time_contenders(ways: dict[str, Contender], repeat: int | None, budget: float,
                    warmup: int = 3, block: int = 1,
                    clock: Callable[[], float] = time.perf_counter) -> tuple[dict[str, float], int]:
    """Median seconds per call of each contender, timed round-robin: each round runs `block`
    calls of each contender in turn (each call timed), so that the machine's noise hits all
    alike, while a block > 1 lets each contender run with its own data in cache, as in a loop.
    repeat=None: as many rounds as fit `budget` s.  clock: time.thread_time measures the
    calling thread's CPU time (one-thread runs on a loaded host: waiting for a core is not
    counted)."""
    def once(way: Contender) -> float:
        args = way.setup()
        t0 = clock()
        way.run(*args)
        return clock() - t0

    for way in ways.values():
        for _ in range(warmup):
            once(way)
    if repeat is None:
        per_round = sum(min(once(w) for _ in range(3)) for w in ways.values()) * block
        repeat = int(min(1000, max(10, budget / max(per_round, 1e-9))))
    samples: dict[str, list[float]] = {k: [] for k in ways}
    gc.collect()
    for _ in range(repeat):
        for name, way in ways.items():
            samples[name].extend(once(way) for _ in range(block))
    return {k: statistics.median(v) for k, v in samples.items()}, repeat


def _fmt_us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f}"


def _fmt_ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tapegrad bench",
        description="Time tapegrad against hand-written numpy (and PyTorch, if importable) on a "
                    "few workloads, one thread each; print medians (us) and ratios.")
    parser.add_argument("--quick", action="store_true",
                        help="a few seconds in all (fewer rounds, noisier medians)")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="timed rounds per workload (default: as many as fit ~4 s, at most 1000)")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even if installed")
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be positive")
    budget, warmup = (0.15, 1) if args.quick else (4.0, 5)
    if args.quick and args.repeat is None:
        args.repeat = 10

    start = time.perf_counter()
    how = limit_threads(1)
    import tapegrad
    libs: dict[str, Any] = {"tapegrad": tapegrad}
    torch_note = "skipped (--no-torch)"
    if not args.no_torch:
        try:
            import torch
        except Exception as e:
            torch_note = f"not importable ({type(e).__name__}): torch columns are blank"
        else:
            set_torch_threads(torch, 1)
            libs["torch"] = torch
            torch_note = f"torch {torch.__version__}"

    print(f"tapegrad {tapegrad.__version__} bench ({os.path.dirname(tapegrad.__file__)}); "
          f"numpy {np.__version__}; {torch_note}")
    print(f"threads: 1 (env {','.join(f'{k}={v}' for k, v in thread_env().items() if v)}; "
          f"numpy BLAS pool limited with {how})")
    print(f"BLAS: {blas_line()}")
    rounds = ("N (adaptive: ~4 s per workload)" if args.repeat is None else str(args.repeat))
    print(f"medians over {rounds} timed rounds after {warmup} warm-up call(s); every row's "
          f"gradients checked against numpy first\n")

    header = (f"{'workload':<46} {'numpy us':>11} {'tapegrad us':>12} {'torch us':>11} "
              f"{'tg/numpy':>9} {'tg/torch':>9} {'tg us/op':>9} {'rounds':>7}")
    print(header)
    print("-" * len(header))
    notes = []
    for label, n_ops, make, check in cli_workloads(libs):
        check()
        med, n = time_contenders(make(), args.repeat, budget, warmup)
        tg, npy, th = med.get("tapegrad"), med.get("numpy"), med.get("torch")
        per_op = "-" if n_ops is None else f"{tg / n_ops * 1e6:.3f}"
        print(f"{label:<46} {_fmt_us(npy):>11} {_fmt_us(tg):>12} {_fmt_us(th):>11} "
              f"{_fmt_ratio(tg, npy):>9} {_fmt_ratio(tg, th):>9} {per_op:>9} {n:>7}",
              flush=True)
        if "tapegrad grad" in med:
            notes.append(f"{label}: hvp / gradient of the same function = tapegrad "
                         f"{_fmt_ratio(tg, med['tapegrad grad'])}, torch "
                         f"{_fmt_ratio(th, med.get('torch grad'))} (numpy: hand-written H v)")
    for note in notes:
        print(f"\n{note}")
    print(f"\ntotal time {time.perf_counter() - start:.1f} s. Ratios below 1 mean tapegrad "
          f"is faster. Full suite: pytest bench (bench/README.md).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
