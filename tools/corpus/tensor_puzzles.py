# srush/Tensor-Puzzles: the 21 puzzles' specs (verbatim) with solutions written in torch under
# the puzzles' rules (only arange, where, indexing, broadcasting); each checked against its spec
# on deterministic random inputs (numpy RandomState instead of hypothesis), and against the
# torch function it re-implements.
import numpy as np
import torch
tensor = torch.tensor

def arange(i: int):
    return torch.tensor(range(i))
def where(q, a, b):
    return (q * a) + (~q) * b

def ones_spec(out):
    for i in range(len(out)): out[i] = 1
def ones(i): return where(arange(i) > -1, 1, 0)
def sum_spec(a, out):
    out[0] = 0
    for i in range(len(a)): out[0] += a[i]
def sum(a): return ones(a.shape[0]) @ a[:, None]
def outer_spec(a, b, out):
    for i in range(len(out)):
        for j in range(len(out[0])): out[i][j] = a[i] * b[j]
def outer(a, b): return a[:, None] * b[None, :]
def diag_spec(a, out):
    for i in range(len(a)): out[i] = a[i][i]
def diag(a): return a[arange(a.shape[0]), arange(a.shape[0])]
def eye_spec(out):
    for i in range(len(out)): out[i][i] = 1
def eye(j): return where(arange(j)[:, None] == arange(j), 1, 0)
def triu_spec(out):
    for i in range(len(out)):
        for j in range(len(out)): out[i][j] = 1 if i <= j else 0
def triu(j): return where(arange(j)[:, None] <= arange(j), 1, 0)
def cumsum_spec(a, out):
    total = 0
    for i in range(len(out)):
        out[i] = total + a[i]; total += a[i]
def cumsum(a): return a @ triu(a.shape[0])
def diff_spec(a, out):
    out[0] = a[0]
    for i in range(1, len(out)): out[i] = a[i] - a[i - 1]
def diff(a, i): return a - where(arange(i) > 0, a[arange(i) - 1], 0)
def vstack_spec(a, b, out):
    for i in range(len(out[0])): out[0][i] = a[i]; out[1][i] = b[i]
def vstack(a, b): return where(arange(2)[:, None] == 0, a, b)
def roll_spec(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1] if i + 1 < len(out) else a[i + 1 - len(out)]
def roll(a, i): return a[(arange(i) + 1) % i]
def flip_spec(a, out):
    for i in range(len(out)): out[i] = a[len(out) - i - 1]
def flip(a, i): return a[i - arange(i) - 1]
def compress_spec(g, v, out):
    j = 0
    for i in range(len(g)):
        if g[i]: out[j] = v[i]; j += 1
def compress(g, v, i): return v @ where(g[:, None], arange(i) == (cumsum(1 * g) - 1)[:, None], 0)
def pad_to_spec(a, out):
    for i in range(min(len(out), len(a))): out[i] = a[i]
def pad_to(a, i, j): return a @ (1 * (arange(i)[:, None] == arange(j)))
def sequence_mask_spec(values, length, out):
    for i in range(len(out)):
        for j in range(len(out[0])): out[i][j] = values[i][j] if j < length[i] else 0
def sequence_mask(values, length): return where(length[:, None] > arange(values.shape[1]), values, 0)
def bincount_spec(a, out):
    for i in range(len(a)): out[a[i]] += 1
def bincount(a, j): return ones(a.shape[0]) @ eye(j)[a]
def scatter_add_spec(values, link, out):
    for j in range(len(values)): out[link[j]] += values[j]
def scatter_add(values, link, j): return values @ eye(j)[link]
def flatten_spec(a, out):
    k = 0
    for i in range(len(a)):
        for j in range(len(a[0])): out[k] = a[i][j]; k += 1
def flatten(a, i, j): return a[arange(i * j) // j, arange(i * j) % j]
def linspace_spec(i, j, out):
    for k in range(len(out)): out[k] = float(i + (j - i) * k / max(1, len(out) - 1))
def linspace(i, j, n): return i + (j - i) * arange(n) / max(1, n - 1)
def heaviside_spec(a, b, out):
    for k in range(len(out)): out[k] = b[k] if a[k] == 0 else int(a[k] > 0)
def heaviside(a, b): return where(a == 0, b, a > 0)
def repeat_spec(a, d, out):
    for i in range(d[0]):
        for k in range(len(a)): out[i][k] = a[k]
def repeat(a, d): return ones(d[0])[:, None] @ a[None, :]
def bucketize_spec(v, boundaries, out):
    for i, val in enumerate(v):
        out[i] = 0
        for j in range(len(boundaries) - 1):
            if val >= boundaries[j]: out[i] = j + 1
        if val >= boundaries[-1]: out[i] = len(boundaries)
def bucketize(v, boundaries): return (1 * (v[:, None] >= boundaries)) @ ones(boundaries.shape[0])

rng = np.random.RandomState(0)
def ints(*shape): return rng.randint(-5, 6, size=shape)

def check(name, sol, spec, make, ref=None, trials=4):
    print(f"\n=== section: puzzle {name}")
    for t in range(trials):
        args, sizes, out_shape = make()
        tens = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        got = sol(*tens, *sizes)
        out = np.zeros(out_shape, dtype=np.float64 if name == 'linspace' else np.int64)
        spec(*[a for a in args], out)
        ok = np.allclose(got.numpy(), out) if isinstance(got, torch.Tensor) else False
        print(name, t, tuple(got.shape), got.dtype, 'ok' if ok else 'WRONG', got.tolist() if got.numel() < 12 else got.sum().item())
        if ref is not None:
            r = ref(*tens, *sizes)
            print('  torch builtin:', r.dtype, bool((r == got).all()) if r.shape == got.shape else ('shape', tuple(r.shape)))

def n(): return rng.randint(1, 7)
check('ones', ones, ones_spec, lambda: ([], [k := n()], (k,)))
check('sum', sum, sum_spec, lambda: ([ints(n())], [], (1,)), lambda a: a.sum().reshape(1))
check('outer', outer, outer_spec, lambda: ([a := ints(n()), b := ints(n())], [], (len(a), len(b))), torch.outer)
check('diag', diag, diag_spec, lambda: ([ints(k := n(), k)], [], (k,)), torch.diagonal)
check('eye', eye, eye_spec, lambda: ([], [k := n()], (k, k)), lambda k: torch.eye(k, dtype=torch.long))
check('triu', triu, triu_spec, lambda: ([], [k := n()], (k, k)), lambda k: torch.ones(k, k, dtype=torch.long).triu())
check('cumsum', cumsum, cumsum_spec, lambda: ([ints(k := n())], [], (k,)), lambda a: a.cumsum(0))
check('diff', diff, diff_spec, lambda: ([ints(k := n())], [k], (k,)), lambda a, i: torch.diff(a, prepend=torch.zeros(1, dtype=a.dtype)))
check('vstack', vstack, vstack_spec, lambda: ([ints(k := n()), ints(k)], [], (2, k)), lambda a, b: torch.vstack([a, b]))
check('roll', roll, roll_spec, lambda: ([ints(k := n())], [k], (k,)), lambda a, i: torch.roll(a, -1))
check('flip', flip, flip_spec, lambda: ([ints(k := n())], [k], (k,)), lambda a, i: torch.flip(a, [0]))
check('compress', compress, compress_spec, lambda: ([rng.rand(k := n()) > 0.5, ints(k)], [k], (k,)))
check('pad_to', pad_to, pad_to_spec, lambda: ([ints(k := n())], [k, m := n()], (m,)))
check('sequence_mask', sequence_mask, sequence_mask_spec, lambda: ([ints(k := n(), m := n()), rng.randint(0, m, size=k)], [], (k, m)))
check('bincount', bincount, bincount_spec, lambda: ([rng.randint(0, m := n(), size=n())], [m], (m,)), lambda a, j: torch.bincount(a, minlength=j))
check('scatter_add', scatter_add, scatter_add_spec, lambda: ([ints(k := n()), rng.randint(0, m := n(), size=k)], [m], (m,)), lambda v, l, j: torch.zeros(j, dtype=v.dtype).scatter_add(0, l, v))
check('flatten', flatten, flatten_spec, lambda: ([ints(k := n(), m := n())], [k, m], (k * m,)), lambda a, i, j: a.flatten())
check('linspace', lambda i, j, n: linspace(i, j, n), linspace_spec, lambda: ([np.array(rng.randint(-5, 6)), np.array(rng.randint(-5, 6))], [m := n()], (m,)))
check('heaviside', heaviside, heaviside_spec, lambda: ([ints(k := n()), ints(k)], [], (k,)), torch.heaviside)
check('repeat', repeat, repeat_spec, lambda: ([ints(k := n()), np.array([n()])], [], None) if False else ([a := ints(n()), d := np.array([n()])], [], (d[0], len(a))), lambda a, d: a.repeat(int(d[0]), 1))
check('bucketize', bucketize, bucketize_spec, lambda: ([ints(n()), np.abs(ints(n())).cumsum()], [], None) if False else ([v := ints(n()), b := np.abs(ints(n())).cumsum()], [], (len(v),)), lambda v, b: torch.bucketize(v, b, right=True))
