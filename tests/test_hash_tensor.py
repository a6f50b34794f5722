"""torch.hash_tensor / Tensor.hash_tensor: the xor of the elements' 64-bit patterns, against
PyTorch (values, dtype, shapes, keepdim, out=, and its refusals in its order)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(fn):
    results = []
    for module in (torch, tapegrad):
        try:
            r = fn(module)
            results.append(("ok", str(r.dtype), tuple(r.shape), r.tolist(), r.requires_grad))
        except Exception as e:          # noqa: BLE001 (the exception is what is compared)
            results.append((type(e).__name__, str(e)))
    return results


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int64", "uint8",
                                   "bool"])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1), []])
@pytest.mark.parametrize("keepdim", [False, True])
def test_hash_tensor_values_match_torch(dtype, dim, keepdim):
    a = (np.arange(-6, 6).reshape(2, 3, 2) * 1.75)
    a = (a > 0) if dtype == "bool" else a.astype(dtype)
    if dtype.startswith("float"):
        a.flat[0], a.flat[1] = np.nan, -0.0     # (NaN's and -0.0's bit patterns count)
    def call(m):
        x = m.tensor(a)
        return m.hash_tensor(x, keepdim=keepdim) if dim is None else \
            m.hash_tensor(x, dim, keepdim=keepdim)
    want, got = _both(call)
    assert got == want


@pytest.mark.parametrize("case", [
    lambda m: m.hash_tensor(m.tensor(2.5)),                            # 0-d
    lambda m: m.hash_tensor(m.tensor(2.5), 0, keepdim=True),
    lambda m: m.hash_tensor(m.zeros(2, 0), 0),                         # an empty result
    lambda m: m.hash_tensor(m.zeros(2, 0, dtype=m.complex64), 0),
    lambda m: m.hash_tensor(m.zeros(2, 0)),                            # no dim for no elements
    lambda m: m.hash_tensor(m.zeros(2, 0), []),
    lambda m: m.hash_tensor(m.zeros(0, 2), (0, 1)),                    # an empty reduced dim
    lambda m: m.hash_tensor(m.ones(2, dtype=m.complex64)),
    lambda m: m.hash_tensor(m.ones(2, dtype=m.complex64), 3),          # the dim's error first
    lambda m: m.hash_tensor(m.ones(2, 3), (0, 0)),
    lambda m: m.hash_tensor(m.ones(2), mode=1),
    lambda m: m.ones(2, 3, requires_grad=True).hash_tensor(1, keepdim=True),
    lambda m: m.hash_tensor(m.ones(2, 3), axis=0),
    lambda m: m.hash_tensor(m.ones(2, 3), 0, True),                    # keepdim is keyword-only
    lambda m: m.hash_tensor(m.arange(6.).reshape(2, 3), 0, out=m.empty(2, dtype=m.uint64)),
    lambda m: m.hash_tensor(m.ones(2, 3), 0, out=m.empty(2)),
])
def test_hash_tensor_edges_match_torch(case):
    want, got = _both(case)
    assert got[0] == want[0]
    if want[0] == "ok":
        assert got == want
    else:
        assert want[1].split(" (")[0].split("\n")[0] in got[1] or got[1] in want[1]
