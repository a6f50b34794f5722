"""Differential fuzzer of the FUNCTION TRANSFORMS, against PyTorch (`python tools/fuzz.py
--kind transforms`, a kind of its own: the seeds of `programs` and `surface` keep their programs).

    python tools/fuzz.py --kind transforms --seconds 600     # subprocess-isolated batches
    python tools/fuzz_transforms.py --seeds 0:100            # in process, one line per finding
    python tools/fuzz_transforms.py --repro 17               # one seed: its source and findings

A program is a pure Python function of 1-3 float tensors (float32 or float64, one dtype per
program) to a tensor or a 0-d scalar, drawn step by step while it runs in PyTorch (so the shapes
fit): unary math, binary ops with broadcasting and Python scalars, reductions with dims /
keepdim, views and shape ops, matmul / einsum, softmax / layer_norm / normalize, where, cat /
stack, in-place ops on a local clone; now and then an op torch.func refuses (`.item()`,
`nonzero`, boolean-mask indexing, an in-place write into a captured tensor) or a random op
(dropout, rand_like).

Each program is wrapped, in tapegrad and in torch alike, in every transform (TRANSFORMS):
torch.func.vmap (random in_dims / out_dims, also against a Python loop of the unbatched program
stacked at out_dims), nested vmap, grad / grad_and_value (argnums, has_aux), vjp, jvp, jacrev,
jacfwd, hessian, functional_call of an nn module applied to the program's output (gradients with
respect to the parameter dict and an input), forward-mode AD (forward_ad: dual_level / make_dual
/ unpack_dual) and torch.autograd.functional's jacobian / hessian / jvp / vjp / hvp / vhp.
The scalar transforms see (program(x) * W).sum() for a fixed weight W.

Compared: values, dtypes and shapes (float tolerances per dtype), None against zeros where a
result may be either.  When both libraries raise, they agree (torch.func refuses data-dependent
shapes, .item() and in-place writes into captured tensors under vmap); a refusal by one library
alone is a finding.  A program with a random op is compared on raising and shapes only (the two
libraries' generators differ).  Known PyTorch bugs the programs meet are skipped (_torch_bug).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import traceback
import warnings

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
for _p in (ROOT, TOOLS):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import fuzz_surface as surface  # noqa: E402

FLOATS = ("float32", "float64")
MAX_STEPS = 8


def literal(arr):
    flat = ", ".join(repr(float(x)) for x in arr.reshape(-1))
    return f"np.array([{flat}], dtype='{arr.dtype}').reshape({tuple(arr.shape)})"


class Program:
    """`body`: the function's statements (over x0.. and v0..), returning `ret`; `inputs`: the
    argument arrays; `consts`: captured tensors (name -> array); `random`: draws random numbers;
    `plan`: the transforms' random choices (in_dims, argnums, ...), drawn with the program."""

    def __init__(self, seed, dtype, inputs, consts, body, ret, random_, plan):
        self.seed, self.dtype, self.inputs, self.consts = seed, dtype, inputs, consts
        self.body, self.ret, self.random, self.plan = body, ret, random_, plan

    def source(self):
        args = ", ".join(f"x{i}" for i in range(len(self.inputs)))
        lines = [f"def f({args}):"] + [f"    {s}" for s in self.body] + [f"    return {self.ret}"]
        return "\n".join(lines)

    def script(self):
        out = ["import numpy as np", "import torch            # or: import tapegrad as torch",
               "F = torch.nn.functional"]
        out += [f"{k} = torch.tensor({literal(a)})" for k, a in self.consts.items()]
        out += [f"x{i} = torch.tensor({literal(a)})" for i, a in enumerate(self.inputs)]
        out.append(self.source())
        out.append(f"# transforms' choices: {self.plan}")
        return "\n".join(out)

    def namespace(self, L):
        ns = {"torch": L, "F": L.nn.functional, "np": np}
        for k, a in self.consts.items():
            ns[k] = L.tensor(a)
        exec(compile(self.source(), f"<transforms {self.seed}>", "exec"), ns)
        return ns


# -- generation -----------------------------------------------------------------------------------

UNARY = ["torch.sin({a})", "torch.cos({a})", "torch.tanh({a})", "torch.sigmoid({a})",
         "{a} * {a}", "F.softplus({a})", "torch.log1p({a} * {a})", "{a}.pow(3)",
         "torch.sqrt({a} * {a} + 1)", "F.gelu({a})", "torch.erf({a})", "({a} * {a} + 1).reciprocal()",
         "torch.exp(-{a} * {a})", "F.relu({a})", "{a}.abs()", "-{a}", "{a}.clamp(-0.5, 0.7)",
         "torch.atan({a})", "F.silu({a})", "F.elu({a})", "F.leaky_relu({a}, 0.1)",
         "torch.square({a})", "{a}.exp()", "F.logsigmoid({a})"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b} * {b} + 1)", "torch.maximum({a}, {b})",
          "torch.minimum({a}, {b})", "torch.atan2({a}, {b} * {b} + 0.5)", "torch.hypot({a}, {b})",
          "{a} * 2.5", "1.5 - {a}", "{a} ** 2", "torch.where({a} > 0, {a}, {b})",
          "torch.lerp({a}, {b}, 0.3)", "torch.addcmul({a}, {a}, {b}, value=0.5)"]


class Gen:
    def __init__(self, seed):
        import torch
        self.torch = torch
        self.r = random.Random(f"transforms {seed}")
        self.seed = seed
        self.body = []
        self.vars = {}          # name -> shape (torch's run)
        self.ns = {"torch": torch, "F": torch.nn.functional, "np": np}
        self.n = 0
        self.random = False

    def add(self, code):
        name = f"v{self.n}"
        try:
            val = eval(code, self.ns)
        except Exception:  # noqa: BLE001 - a draw that does not fit: not kept
            return None
        if not isinstance(val, self.torch.Tensor) or not val.is_floating_point():
            return None
        self.n += 1
        self.ns[name] = val
        self.vars[name] = tuple(val.shape)
        self.body.append(f"{name} = {code}")
        return name

    def pick(self, pred=lambda s: True):
        c = [k for k, s in self.vars.items() if pred(s)]
        if not c:
            return None
        return self.r.choices(c, [1 + i for i in range(len(c))])[0]

    def partner(self, a):
        r, shape = self.r, self.vars[a]
        if r.random() < 0.5:
            same = [k for k, s in self.vars.items() if _broadcasts(s, shape)]
            if same:
                return r.choice(same)
        return None

    def step(self):
        r, torch = self.r, self.torch
        a = self.pick()
        shape = self.vars[a]
        nd = len(shape)
        kind = r.choices(["unary", "binary", "reduce", "shape", "matmul", "nn", "join",
                          "inplace", "refused", "random"], [6, 6, 3, 4, 2, 2, 1, 1, 0.4, 0.25])[0]
        if kind == "unary":
            return self.add(r.choice(UNARY).format(a=a))
        if kind == "binary":
            b = self.partner(a) or a
            return self.add(r.choice(BINARY).format(a=a, b=b))
        if kind == "reduce":
            fn = r.choice(["sum", "mean", "amax", "logsumexp", "norm", "prod", "var", "cumsum",
                           "std", "softmax"])
            if nd == 0 or fn == "norm" or r.random() < 0.2:
                if fn in ("logsumexp", "cumsum", "softmax"):
                    return self.add(f"{a}.sum()")
                return self.add(f"{a}.{fn}()")
            d = r.randrange(-nd, nd)
            if fn in ("cumsum", "softmax"):
                return self.add(f"{a}.{fn}({d})")
            kd = r.random() < 0.4
            return self.add(f"{a}.{fn}({d}, keepdim={kd})" if fn != "logsumexp"
                            else f"torch.logsumexp({a}, {d}, keepdim={kd})")
        if kind == "shape":
            ops = ["{a}.unsqueeze({u})", "{a}.reshape(-1)", "{a}.flatten()"]
            if nd >= 1:
                d = r.randrange(nd)
                ops += [f"{{a}}.flip({d})", f"{{a}}.narrow({d}, 0, {max(shape[d] - 1, 0)})",
                        f"{{a}}.select({d}, {r.randrange(shape[d]) if shape[d] else 0})",
                        f"{{a}}[..., {r.randint(0, max(shape[-1], 1))}:]",
                        f"{{a}}.expand(2, *{{a}}.shape)", f"{{a}}.repeat({', '.join(['2'] + ['1'] * (nd - 1))})",
                        f"{{a}}.roll(1, {d})", "{a}.contiguous()", f"{{a}}.movedim({d}, 0)"]
            if nd >= 2:
                p = list(range(nd))
                r.shuffle(p)
                ops += ["{a}.t()" if nd == 2 else "{a}.transpose(0, 1)", f"{{a}}.permute({p})",
                        "{a}.mT", "torch.diagonal({a}, 0, -2, -1)", "{a}.tril()"]
            return self.add(r.choice(ops).format(a=a, u=r.randint(0, nd)))
        if kind == "matmul":
            if nd >= 1:
                k = shape[-1]
                b = self.pick(lambda s: len(s) >= 1 and (s[0] if len(s) <= 2 else s[-2]) == k)
                if b is not None and r.random() < 0.7:
                    return self.add(f"{a} @ {b}")
                if nd == 2 and r.random() < 0.5:
                    return self.add(f"torch.einsum('ij,kj->ik', {a}, {a})")
                return self.add(f"{a} @ {a}.mT" if nd >= 2 else f"torch.dot({a}, {a})")
            return None
        if kind == "nn":
            if nd == 0:
                return self.add(f"F.softplus({a})")
            d = r.randrange(-nd, nd)
            return self.add(r.choice([f"F.softmax({a}, {d})", f"F.log_softmax({a}, {d})",
                                      f"F.layer_norm({a}, {a}.shape[-1:])",
                                      f"F.normalize({a}, dim={d})",
                                      f"F.hardtanh({a})", f"F.mse_loss({a}, torch.sin({a}))"]))
        if kind == "join":
            b = self.pick(lambda s: s == shape) or a
            d = r.randint(0, nd)
            return self.add(r.choice([f"torch.stack([{a}, {b}], {d})",
                                      f"torch.cat([{a}, {b}], {min(d, nd - 1)})" if nd else
                                      f"torch.stack([{a}, {b}])"]))
        if kind == "inplace":
            # an in-place op on a local clone: every transform supports it
            op = r.choice(["mul_(2.0)", "add_(1.5)", "sin_()", "clamp_(-1.0, 1.0)", "neg_()"])
            name = f"v{self.n}"
            self.body.append(f"{name} = {a}.clone()")
            self.ns[name] = self.ns[a].clone()
            self.n += 1
            self.vars[name] = shape
            return self.add(f"{name}.{op}")
        if kind == "refused":
            choice = r.choice(["item", "nonzero", "mask", "captured"])
            if choice == "item":
                return self.add(f"{a} * {a}.sum().item()")
            if choice == "nonzero":
                return self.add(f"{a}.reshape(-1)[{a}.reshape(-1).nonzero()[:, 0]]")
            if choice == "mask":
                return self.add(f"{a}[{a} > 0]")
            if choice == "captured":
                self.ns["C"] = torch.zeros(shape, dtype=self.ns[a].dtype)
                self.capture = np.zeros(shape, dtype=str(self.ns[a].dtype).split(".")[-1])
                return self.add(f"C.add_({a})")
        if kind == "random":
            self.random = True
            return self.add(r.choice([f"F.dropout({a}, 0.5, training=True)",
                                      f"{a} + torch.rand_like({a})",
                                      f"{a} * torch.randn_like({a})"]))
        return None


def _broadcasts(s1, s2):
    for x, y in zip(reversed(s1), reversed(s2)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def generate(seed):
    """The program of `seed` and its transforms' choices."""
    g = Gen(seed)
    r = g.r
    torch = g.torch
    dtype = r.choice(FLOATS)
    n_in = r.choices([1, 2, 3], [3, 3, 2])[0]
    base = surface.rand_shape(r, r.choice([0, 1, 1, 2, 2, 3]), 1, 3)
    inputs = []
    for i in range(n_in):
        # mostly the same shape (vmap's in_dims, broadcasting), now and then a broadcastable one
        shape = base if r.random() < 0.6 else tuple(
            1 if r.random() < 0.3 else d for d in base[r.randint(0, len(base)):])
        arr = surface.make_values(r, shape, dtype, r.choices(["normal", "positive", "ties"],
                                                             [8, 1, 1])[0])
        inputs.append(arr)
        g.ns[f"x{i}"] = torch.tensor(arr)
        g.vars[f"x{i}"] = tuple(shape)
    g.capture = None
    for _ in range(r.randint(1, MAX_STEPS)):
        g.step()
    outs = [k for k in g.vars if k.startswith("v")]
    ret = outs[-1] if outs else "x0 * 1.0"
    if r.random() < 0.25:
        ret = f"{ret}.sum()"
    consts = {"C": g.capture} if g.capture is not None else {}
    out_nd = len(eval(ret, g.ns).shape)
    plan = draw_plan(r, inputs, out_nd)
    return Program(seed, dtype, inputs, consts, g.body, ret, g.random, plan)


def draw_plan(r, inputs, out_nd):
    n = len(inputs)
    B = r.randint(1, 3)
    in_dims = []
    for a in inputs:
        choices = [None] + list(range(-a.ndim - 1, a.ndim + 1))
        in_dims.append(r.choice(choices) if r.random() < 0.7 else 0)
    if all(d is None for d in in_dims):
        in_dims[r.randrange(n)] = 0
    out_dims = r.choice(list(range(-out_nd - 1, out_nd + 1)))
    in_dims2 = [r.choice([0, None]) for _ in range(n)]
    if all(d is None for d in in_dims2):
        in_dims2[0] = 0
    argnums = r.choice([0, 0, tuple(sorted(r.sample(range(n), r.randint(1, n))))])
    if isinstance(argnums, tuple) and r.random() < 0.3:
        argnums = argnums[::-1]
    return {"B": B, "B2": r.randint(1, 2), "in_dims": tuple(in_dims), "out_dims": out_dims,
            "out_nd": out_nd,
            "in_dims2": tuple(in_dims2), "argnums": argnums, "has_aux": r.random() < 0.4,
            "randomness": r.choice(["error", "different", "same"]),
            "key": r.randrange(2 ** 32), "hidden": r.randint(1, 3)}


# -- the transforms -------------------------------------------------------------------------------

def _arr(key, shape, dtype, k):
    return np.random.default_rng([key, k]).standard_normal(shape).astype(dtype)


def _batched(prog, L, dims, B, k):
    """The inputs with a batch dimension of size B inserted at dims[i] (None: unbatched)."""
    out = []
    for i, (a, d) in enumerate(zip(prog.inputs, dims)):
        if d is None:
            out.append(L.tensor(a))
            continue
        stack = np.stack([a + 0.25 * j * _arr(prog.plan["key"], a.shape, a.dtype, k + 10 * i)
                          for j in range(B)], axis=d if d >= 0 else a.ndim + 1 + d)
        out.append(L.tensor(stack.astype(a.dtype)))
    return out


def _scalar(L, f, prog):
    """(f(*xs) * W).sum(), W fixed from the plan's key in f's output shape."""
    cache = {}

    def fs(*xs):
        o = f(*xs)
        if "W" not in cache:
            cache["W"] = L.tensor(_arr(prog.plan["key"], tuple(o.shape), prog.dtype, 99))
        return (o * cache["W"]).sum()
    return fs


def _out_dims(L, out_dims, out_nd):
    """torch's vmap is given a negative out_dims as its positive equivalent: PyTorch's vmap of an
    output that does not depend on the mapped inputs at a negative out_dims segfaults or makes
    a batch dim of 2**35 (see _torch_bug); tapegrad's is checked at the negative one."""
    if L.__name__ == "torch" and out_dims < 0:
        return out_dims + out_nd + 1
    return out_dims


def t_vmap(L, prog, ns):
    p = prog.plan
    xs = _batched(prog, L, p["in_dims"], p["B"], 1)
    return L.func.vmap(ns["f"], in_dims=p["in_dims"],
                       out_dims=_out_dims(L, p["out_dims"], p["out_nd"]),
                       randomness=p["randomness"])(*xs)


def t_vmap_loop(L, prog, ns):
    """tapegrad's vmap against a Python loop of the unbatched program (the loop in torch is
    the reference): each compared to torch's loop."""
    p = prog.plan
    xs = _batched(prog, L, p["in_dims"], p["B"], 1)
    if L.__name__ != "torch":
        return t_vmap(L, prog, ns)
    rows = []
    for j in range(p["B"]):
        rows.append(ns["f"](*[x if d is None else x.select(d, j)
                              for x, d in zip(xs, p["in_dims"])]))
    return L.stack(rows, p["out_dims"])


def t_vmap_nested(L, prog, ns):
    p = prog.plan
    inner = L.func.vmap(ns["f"], in_dims=p["in_dims2"])
    outer_dims = tuple(0 if d is not None else None for d in p["in_dims2"])
    xs = _batched(prog, L, p["in_dims2"], p["B2"], 2)
    # the outer level maps a new leading dim of the mapped inputs (B copies, scaled)
    xs = [x if d is None else L.stack([x * (1 + 0.5 * j) for j in range(p["B"])])
          for x, d in zip(xs, p["in_dims2"])]
    return L.func.vmap(inner, in_dims=outer_dims,
                       out_dims=_out_dims(L, -1, p["out_nd"] + 1) if p["B"] == 2 else 0)(*xs)


def vmap_nested_loop(L, prog, ns):
    """t_vmap_nested with its outer level a Python loop stacked at the same out_dims: the
    reference where PyTorch's nested vmap of an output not depending on the mapped inputs
    places the rows wrongly (see _torch_bug)."""
    p = prog.plan
    inner = L.func.vmap(ns["f"], in_dims=p["in_dims2"])
    xs = _batched(prog, L, p["in_dims2"], p["B2"], 2)
    xs = [x if d is None else L.stack([x * (1 + 0.5 * j) for j in range(p["B"])])
          for x, d in zip(xs, p["in_dims2"])]
    rows = [inner(*[x if d is None else x[j] for x, d in zip(xs, p["in_dims2"])])
            for j in range(p["B"])]
    return L.stack(rows, -1 if p["B"] == 2 else 0)


def _xs(L, prog):
    return [L.tensor(a) for a in prog.inputs]


def _aux_fn(L, prog, ns):
    fs = _scalar(L, ns["f"], prog)
    if prog.plan["has_aux"]:
        return lambda *xs: (fs(*xs), {"out": ns["f"](*xs) * 2})
    return fs


def t_grad(L, prog, ns):
    p = prog.plan
    return L.func.grad(_aux_fn(L, prog, ns), argnums=p["argnums"], has_aux=p["has_aux"])(
        *_xs(L, prog))


def t_grad_and_value(L, prog, ns):
    p = prog.plan
    return L.func.grad_and_value(_aux_fn(L, prog, ns), argnums=p["argnums"],
                                 has_aux=p["has_aux"])(*_xs(L, prog))


def t_vjp(L, prog, ns):
    xs = _xs(L, prog)
    out, fn = L.func.vjp(ns["f"], *xs)
    ct = L.tensor(_arr(prog.plan["key"], tuple(out.shape), prog.dtype, 7))
    return out, fn(ct)


def _tangents(L, prog):
    return tuple(L.tensor(_arr(prog.plan["key"], a.shape, a.dtype, 20 + i))
                 for i, a in enumerate(prog.inputs))


def t_jvp(L, prog, ns):
    return L.func.jvp(ns["f"], tuple(_xs(L, prog)), _tangents(L, prog))


def t_jacrev(L, prog, ns):
    return L.func.jacrev(ns["f"], argnums=prog.plan["argnums"])(*_xs(L, prog))


def t_jacfwd(L, prog, ns):
    return L.func.jacfwd(ns["f"], argnums=prog.plan["argnums"])(*_xs(L, prog))


def t_hessian(L, prog, ns):
    return L.func.hessian(_scalar(L, ns["f"], prog), argnums=prog.plan["argnums"])(
        *_xs(L, prog))


def t_functional_call(L, prog, ns):
    """A module applied to the program's output (flattened to one row): the value and the
    gradients with respect to the parameter dict and the first input."""
    p = prog.plan
    xs = _xs(L, prog)
    k = int(np.prod(ns["f"](*xs).shape))
    mod = L.nn.Sequential(L.nn.Linear(k, p["hidden"] + 1), L.nn.Tanh(),
                          L.nn.Linear(p["hidden"] + 1, 2))
    params = {name: L.tensor(_arr(p["key"], tuple(t.shape), prog.dtype, 40 + i))
              for i, (name, t) in enumerate(mod.named_parameters())}
    W = L.tensor(_arr(p["key"], (1, 2), prog.dtype, 50))

    def loss(params, x0):
        o = ns["f"](x0, *xs[1:]).reshape(1, -1)
        return (L.func.functional_call(mod, params, (o,)) * W).sum()
    value = loss(params, xs[0])
    g = L.func.grad(loss, argnums=(0, 1))(params, xs[0])
    return value, g


def t_forward_ad(L, prog, ns):
    fwAD = L.autograd.forward_ad
    xs, ts = _xs(L, prog), _tangents(L, prog)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip(xs, ts)]
        out = ns["f"](*duals)
        primal, tangent = fwAD.unpack_dual(out)
        return primal.detach(), None if tangent is None else tangent.detach()


def _af_inputs(L, prog):
    xs = _xs(L, prog)
    return xs[0] if len(xs) == 1 else tuple(xs)


def _af_vec(L, prog, k):
    v = [L.tensor(_arr(prog.plan["key"], a.shape, a.dtype, k + i))
         for i, a in enumerate(prog.inputs)]
    return v[0] if len(v) == 1 else tuple(v)


def t_af_jacobian(L, prog, ns):
    return L.autograd.functional.jacobian(ns["f"], _af_inputs(L, prog),
                                          vectorize=prog.plan["B"] == 2)


def t_af_hessian(L, prog, ns):
    return L.autograd.functional.hessian(_scalar(L, ns["f"], prog), _af_inputs(L, prog))


def t_af_jvp(L, prog, ns):
    return L.autograd.functional.jvp(ns["f"], _af_inputs(L, prog), _af_vec(L, prog, 20))


def t_af_vjp(L, prog, ns):
    out = ns["f"](*_xs(L, prog))
    v = L.tensor(_arr(prog.plan["key"], tuple(out.shape), prog.dtype, 7))
    return L.autograd.functional.vjp(ns["f"], _af_inputs(L, prog), v)


def t_af_hvp(L, prog, ns):
    return L.autograd.functional.hvp(_scalar(L, ns["f"], prog), _af_inputs(L, prog),
                                     _af_vec(L, prog, 30))


def t_af_vhp(L, prog, ns):
    return L.autograd.functional.vhp(_scalar(L, ns["f"], prog), _af_inputs(L, prog),
                                     _af_vec(L, prog, 30))


TRANSFORMS = {
    "vmap": t_vmap, "vmap-vs-loop": t_vmap_loop, "vmap-nested": t_vmap_nested,
    "grad": t_grad, "grad_and_value": t_grad_and_value, "vjp": t_vjp, "jvp": t_jvp,
    "jacrev": t_jacrev, "jacfwd": t_jacfwd, "hessian": t_hessian,
    "functional_call": t_functional_call, "forward_ad": t_forward_ad,
    "F.jacobian": t_af_jacobian, "F.hessian": t_af_hessian, "F.jvp": t_af_jvp,
    "F.vjp": t_af_vjp, "F.hvp": t_af_hvp, "F.vhp": t_af_vhp,
}


# -- running and comparing ----------------------------------------------------------------------

def run(L, prog, name):
    """("ok", result) or ("err", builtin exception kind, message)."""
    ns = prog.namespace(L)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", TRANSFORMS[name](L, prog, ns))
    except Exception as e:  # noqa: BLE001 - an error is a result here
        return ("err", surface.err_kind(e), f"{type(e).__name__}: {str(e)[:200]}")


def _is_tensor(x):
    return hasattr(x, "detach") and hasattr(x, "shape") and hasattr(x, "dtype")


def _np(x):
    """x's values (PyTorch's efficient zero tensor, a gradient it never materialises, read as
    the zeros it stands for)."""
    x = x.detach()
    if getattr(x, "_is_zerotensor", lambda: False)():
        x = x.clone()
    return x.numpy()


def _tol(dtype):
    return (2e-3, 2e-4) if dtype == "float32" else (1e-6, 1e-8)


def compare(t, g, path, loose, same_rows=None):
    """Differences of g (tapegrad) from t (torch), as messages."""
    if _is_tensor(t) or _is_tensor(g):
        if not (_is_tensor(t) and _is_tensor(g)):
            if t is None and _is_tensor(g) and not np.any(_np(g)):
                return []
            if g is None and _is_tensor(t) and not np.any(_np(t)):
                return []
            return [f"{path}: {type(g).__name__} where torch has {type(t).__name__}"]
        td, gd = str(t.dtype).split(".")[-1], str(g.dtype).split(".")[-1]
        if td != gd:
            return [f"{path}: dtype {gd} where torch has {td}"]
        if tuple(t.shape) != tuple(g.shape):
            return [f"{path}: shape {tuple(g.shape)} where torch has {tuple(t.shape)}"]
        if loose:
            return []
        ta, ga = _np(t), _np(g)
        rtol, atol = _tol(td)
        # scale the absolute tolerance with the magnitude of what is compared (jacobians of
        # float32 programs sum several products)
        scale = max(1.0, float(np.nanmax(np.abs(ta[np.isfinite(ta)]), initial=0.0)))
        if not np.allclose(ga, ta, rtol=rtol, atol=atol * scale, equal_nan=True):
            with np.errstate(invalid="ignore"):
                bad = ~np.isclose(ga, ta, rtol=rtol, atol=atol * scale, equal_nan=True)
            i = np.argwhere(bad)[0]
            return [f"{path}: value at {tuple(int(k) for k in i)}: {ga[tuple(i)]!r} where "
                    f"torch has {ta[tuple(i)]!r} (shape {ta.shape})"]
        return []
    if isinstance(t, dict) and isinstance(g, dict):
        if sorted(t) != sorted(g):
            return [f"{path}: keys {sorted(g)} where torch has {sorted(t)}"]
        return [m for k in t for m in compare(t[k], g[k], f"{path}[{k!r}]", loose)]
    if isinstance(t, (tuple, list)) and isinstance(g, (tuple, list)):
        if len(t) != len(g):
            return [f"{path}: {len(g)} items where torch has {len(t)}"]
        return [m for i, (a, b) in enumerate(zip(t, g)) for m in compare(a, b, f"{path}[{i}]",
                                                                           loose)]
    if type(t) is not type(g) and not (t is None or g is None):
        if isinstance(t, (tuple, list)) or isinstance(g, (tuple, list)):
            return [f"{path}: {type(g).__name__} where torch has {type(t).__name__}"]
    if t != g:
        return [f"{path}: {g!r} where torch has {t!r}"]
    return []


def check_program(prog, names=None):
    """[(transform, category, message)] of the program.  Categories: value, tapegrad-raises,
    torch-raises (tapegrad computes what torch.func refuses), degenerate (a value finding of a
    program whose own value is not finite: no derivative to compare)."""
    import tapegrad
    import torch
    found = []
    results = {}
    for name in names or TRANSFORMS:
        surface.mark_phase(torch)
        t = run(torch, prog, name)
        surface.mark_phase(tapegrad)
        g = run(tapegrad, prog, name)
        results[name] = (t, g)
        if t[0] == "err" and g[0] == "err":
            continue                      # both refuse: agreeing (types may differ)
        if name == "vmap-vs-loop" and results.get("vmap", (("ok",),))[0][0] == "err":
            continue                      # torch's vmap refuses: its loop is no reference
        if t[0] == "err" and _torch_bug(prog, name, t):
            continue
        if t[0] == "err":
            found.append((name, "torch-raises", t[2]))
            continue
        if g[0] == "err":
            found.append((name, "tapegrad-raises", g[2]))
            continue
        msgs = compare(t[1], g[1], name, prog.random)
        if msgs and _torch_bug(prog, name, t, g, results):
            continue
        if msgs and name == "vmap-vs-loop" and _equals_torch_vmap(prog, g, results):
            # torch's own vmap and loop disagree, so tapegrad's vmap, equal to torch's, is
            # no finding: a program writing a captured tensor (C.add_) accumulates over the
            # loop's calls, once under vmap (seed 6283)
            continue
        cat = "degenerate" if msgs and not _finite(prog) else "value"
        found += [(name, cat, m) for m in msgs[:3]]
    return found


def _equals_torch_vmap(prog, g, results) -> bool:
    """Whether tapegrad's vmap result `g` (of vmap-vs-loop) equals torch's vmap's."""
    tv = results.get("vmap", (None,))[0]
    return tv is not None and tv[0] == "ok" and not compare(tv[1], g[1], "vmap", prog.random)


def _tensors(x):
    if _is_tensor(x):
        return [x]
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _tensors(e)]
    return []


def _finite(prog):
    """Whether the program's own value (torch's) is finite everywhere."""
    import torch
    ns = prog.namespace(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = ns["f"](*[torch.tensor(a) for a in prog.inputs])
        except Exception:  # noqa: BLE001
            return True
    return bool(np.isfinite(_np(out)).all())


def _torch_bug(prog, name, t, g=None, results=None):
    """Known PyTorch bugs the programs meet (not differences of tapegrad's):
    - vmap of an output that does not depend on the mapped inputs, at out_dims other than 0:
      a negative out_dims gives a batch size of 2**35 and more, a positive one raises expand's
      size error or places the rows wrongly (vmap(lambda x, y: y.sum(), (0, None),
      out_dims=-1) of a batch of 1 has shape (34359738368,)); tapegrad agreeing with torch's
      own Python loop of the program settles it (for nested vmap: a loop of the outer level);
    - forward mode of a 0-d float32 tensor times a Python scalar: torch.func.jvp(lambda x:
      x * 1.0, (tensor(2.),), (tensor(1.),)) has a float64 tangent (forward_ad's is float32),
      and ops after it raise "Found dtype Double but expected Float";
    - autograd.functional.jacobian and jacrev of an output with no elements raise (torch.stack
      of no rows, select of row 0)."""
    if t[0] == "err":
        msg = t[2]
        if name.startswith("vmap") and ("expanded size" in msg or
                                        "number of sizes provided" in msg):
            return True
        if "Found dtype Double but expected Float" in msg and prog.dtype == "float32":
            return True
        return name in ("F.jacobian", "jacrev") and ("non-empty TensorList" in msg or
                                                     msg.startswith("IndexError"))
    if name.startswith("vmap") and any(d >= 2 ** 30 for x in _tensors(t[1]) for d in x.shape):
        return True
    if name == "vmap":
        import torch
        loop = results.get("vmap-vs-loop", (run(torch, prog, "vmap-vs-loop"),))[0]
        return loop[0] == "ok" and not compare(loop[1], g[1], name, prog.random)
    if name == "vmap-nested":
        # (the nested form of the first bug: 2318, 2384)
        import torch
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loop = vmap_nested_loop(torch, prog, prog.namespace(torch))
        except Exception:  # noqa: BLE001 - no reference: not settled as torch's
            return False
        return not compare(loop, g[1], name, prog.random)
    if name in ("jvp", "jacfwd", "hessian", "F.jvp") and prog.dtype == "float32":
        return all("dtype float32 where torch has float64" in m
                   for m in compare(t[1], g[1], name, prog.random))
    return False


def check_seed(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = generate(seed)
    return prog, check_program(prog)


def summary(seed):
    """The driver's records of one seed (tools/fuzz.py --kind transforms)."""
    prog, found = check_seed(seed)
    return [{"op": name, "mode": prog.dtype, "cat": cat, "msg": msg} for name, cat, msg in found]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default=None, help="A:B, in process")
    ap.add_argument("--repro", type=int, default=None)
    a = ap.parse_args(argv)
    if a.repro is not None:
        prog, found = check_seed(a.repro)
        print(prog.script())
        for name, cat, msg in found:
            print(f"[{name}] [{cat}] {msg}")
        return 1 if found else 0
    s, e = map(int, a.seeds.split(":"))
    for seed in range(s, e):
        try:
            prog, found = check_seed(seed)
        except Exception:  # noqa: BLE001 - a fuzzer bug: show it, keep going
            print(f"seed {seed} fuzzer-error\n{traceback.format_exc()}")
            continue
        for name, cat, msg in found:
            print(f"seed {seed} [{name}] [{cat}] {msg[:300]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
