"""Triage of the session-31 fuzz run fuzz19 (programs 62710709-62713208 with compile mode among
them, 60674505-60675304, 65021815-65023214; surface 60807323-60808822).

No tapegrad error was found; two PyTorch behaviours went into the fuzzer's known-difference
filter (tools/fuzz.py KNOWN).  These tests pin both: what tapegrad computes, what PyTorch does,
and that the filter recognises the fuzzer's message for them.
"""
import os
import sys

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

_TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


@pytest.fixture(scope="module")
def fuzz():
    if _TOOLS not in sys.path:
        sys.path.insert(0, _TOOLS)
    import fuzz as fuzz_module
    return fuzz_module


# -- matrix_exp in float16 / bfloat16 (seed 62712568) ----------------------------------------------
# PyTorch's half-precision matrix_exp is wrong (exp(I) comes out near -2e4, small matrices as
# inf or nan); its float32 / float64 results and tapegrad's in every dtype are the exponential.

HALF_MATRIX = [[0.640625, 0.1767578125], [-0.671875, -1.025390625]]


@pytest.mark.parametrize("dtype", ["float16"])   # (tapegrad has no bfloat16 tensors)
def test_half_matrix_exp_is_the_exponential_where_torch_is_not(dtype):
    a64 = torch.tensor(HALF_MATRIX, dtype=torch.float64)
    expected = torch.linalg.matrix_exp(a64).numpy()
    got = tg.linalg.matrix_exp(tg.tensor(HALF_MATRIX, dtype=getattr(tg, dtype)))
    assert got.dtype == getattr(tg, dtype)
    np.testing.assert_allclose(got.float().numpy(), expected, rtol=2e-2, atol=2e-2)
    theirs = torch.linalg.matrix_exp(a64.to(getattr(torch, dtype))).float().numpy()
    if np.allclose(theirs, expected, rtol=2e-2, atol=2e-2):
        pytest.fail("torch's half matrix_exp is right now: drop the fuzzer's KNOWN entry")


def test_fuzz_filter_knows_torchs_half_matrix_exp(fuzz):
    msg = ("step 1 `v20 = torch.linalg.matrix_exp(v19)` (float16(2, 2)): max|diff| inf; "
           "torch [[ inf -inf]  [ inf  inf]] vs tapegrad [[ 1.83    0.1603]  [-0.6094  0.3188]]")
    assert fuzz.known("value", msg)
    assert fuzz.known("value", msg.replace("float16", "bfloat16"))
    assert not fuzz.known("value", msg.replace("float16", "float32"))


# -- the sign of min / max of +0.0 and -0.0 (seeds 62712624, 62710871) ------------------------------
# PyTorch's answer depends on its kernel path: the vectorised body returns one operand, the
# scalar tail the other.  tapegrad's is the same for every size.

@pytest.mark.parametrize("n", [3, 8])
def test_minimum_of_opposite_zeros_is_the_same_for_every_size(n):
    x = tg.full((n,), -0.0, dtype=tg.float64)
    zero = tg.tensor(0.0, dtype=tg.float64)
    assert not tg.minimum(zero, x).signbit().any()
    assert tg.minimum(x, zero).signbit().all()


def test_torch_minimum_of_opposite_zeros_depends_on_the_size():
    zero = torch.tensor(0.0, dtype=torch.float64)
    small = torch.minimum(zero, torch.full((3,), -0.0, dtype=torch.float64)).signbit()
    large = torch.minimum(zero, torch.full((8,), -0.0, dtype=torch.float64)).signbit()
    if bool(small.all()) == bool(large.all()):
        pytest.skip("this torch build picks one sign for every size")
    assert not small.any() and large.all()


def test_fuzz_filter_knows_the_sign_of_min_max_zeros(fuzz):
    for code in ("v4 = torch.minimum(v3, v0)", "v3 = v1.clamp(v2)", "v5 = torch.maximum(v1, v2)"):
        assert fuzz.known("signed-zero", f"step 3 `{code}`: torch [0.] vs tapegrad [-0.]")
    assert not fuzz.known("value", "step 3 `v4 = torch.minimum(v3, v0)`: max|diff| 1.0")
