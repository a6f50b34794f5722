"""The lead's fixes of session 44, each checked against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest", "area"])
@pytest.mark.parametrize("size", [(2, 2), (7, 3)])
def test_interpolate_empty_batch(mode, size):
    # The float32 bilinear path's fused corner sum reshaped its result with -1 rows: an empty
    # batch left that undetermined and raised numpy's ValueError where PyTorch returns (0, C, ...).
    results = []
    for lib in (torch, tg):
        x = lib.zeros((0, 3, 4, 5), requires_grad=True)
        y = lib.nn.functional.interpolate(x, size=size, mode=mode)
        y.sum().backward()
        results.append((tuple(y.shape), tuple(x.grad.shape), str(y.dtype)))
    assert results[0] == results[1]


_PROMOTED_BY_OPERAND = ["zeta", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
                        "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                        "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_w",
                        "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
                        "legendre_polynomial_p"]


@pytest.mark.parametrize("name", _PROMOTED_BY_OPERAND)
@pytest.mark.parametrize("dtypes", [("float64", "bfloat16"), ("bfloat16", "float64"),
                                    ("float32", "bfloat16"), ("bfloat16", "bfloat16"),
                                    ("bfloat16", None)])
def test_special_binary_bfloat16_operand_takes_the_promoted_kernel(name, dtypes):
    # PyTorch has no bfloat16 kernel for these, but picks the kernel by the promoted dtype: a
    # float64 or float32 operand beside a bfloat16 one computes in that dtype (tapegrad refused
    # whenever an operand was bfloat16: fuzz 67101079); a bfloat16 result still refuses.
    xs, ns = [0.3, -0.2, 1.5], [2.0, 3.0, 1.0]

    def run(lib):
        x = lib.tensor(xs, dtype=getattr(lib, dtypes[0]))
        n = 2 if dtypes[1] is None else lib.tensor(ns, dtype=getattr(lib, dtypes[1]))
        try:
            r = getattr(lib.special, name)(x, n)
        except NotImplementedError as e:
            return "NotImplementedError", str(e).split(" not implemented")[0]
        return str(r.dtype), r.double().numpy()

    expected, got = run(torch), run(tg)
    assert expected[0] == got[0]
    if expected[0] == "NotImplementedError":
        assert expected[1] == got[1]
    else:
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-6 if "32" in got[0] else 1e-12,
                                   equal_nan=True)
