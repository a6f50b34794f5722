"""cat and stack return PyTorch's layout: contiguous, unless every input is channels_last.
numpy's concatenate follows its inputs' strides, so expanded or transposed inputs gave a
column-major result: its flatten() was a copy where PyTorch's is a view, and an in-place write
through it never reached the result (held-out fuzz 59805016, silent)."""
import numpy as np
import pytest

import tapegrad as tg


def _inputs(lib):
    base = lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    return {
        "expand_column": lib.tensor([1., 2., 3.]).reshape(3, 1).expand(3, 4),
        "expand_row": lib.tensor([1., 2., 3., 4.]).expand(3, 4),
        "transposed": base.t(),
        "sliced": base[:, ::2],
        "permuted_3d": base.reshape(3, 2, 2).permute(2, 0, 1),
        "channels_last": lib.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)).to(
            memory_format=lib.channels_last),
    }


JOINS = {
    "cat0": lambda lib, x: lib.cat([x, x], 0),
    "cat_last": lambda lib, x: lib.cat([x, x], -1),
    "stack0": lambda lib, x: lib.stack([x, x], 0),
    "hstack": lambda lib, x: lib.hstack([x, x]),
    "vstack": lambda lib, x: lib.vstack([x, x]),
}


@pytest.mark.parametrize("join", sorted(JOINS))
@pytest.mark.parametrize("kind", sorted(_inputs(tg)))
def test_layout_and_values_as_torch(kind, join):
    torch = pytest.importorskip("torch")
    want = JOINS[join](torch, _inputs(torch)[kind])
    got = JOINS[join](tg, _inputs(tg)[kind])
    assert tuple(got.stride()) == tuple(want.stride())
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("reshape", ["flatten", "view"])
def test_write_through_flatten_of_a_cat_of_expanded_tensors_reaches_it(reshape):
    v0 = tg.tensor([-1.5, -0.9], dtype=tg.float64, requires_grad=True)
    joined = tg.cat([v0.clone().expand(2, 2)] * 2, 0)
    flat = joined.flatten() if reshape == "flatten" else joined.view(-1)
    assert flat._base is joined
    with tg.no_grad():
        flat.div_(2.0)
    np.testing.assert_array_equal(joined.detach().numpy(), [[-0.75, -0.45]] * 4)
