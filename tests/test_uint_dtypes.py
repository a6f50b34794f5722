"""torch.uint16 / uint32 / uint64: PyTorch's barebones unsigned dtypes (creation, conversion,
printing, promotion refused with every other integer or bool dtype)."""
import numpy as np
import pytest

import tapegrad as tg

UNSIGNED = ("uint16", "uint32", "uint64")


def probe(lib, name):
    d = getattr(lib, name)
    a = lib.tensor([1, 2, 3], dtype=d)
    other_int = {"uint16": lib.int16, "uint32": lib.int32, "uint64": lib.int64}[name]
    return {
        "repr": repr(a),
        "repr 2d": repr(lib.tensor([[1, 2], [3, 4464]], dtype=d)),
        "repr 0d": repr(lib.tensor(5, dtype=d)),
        "props": (str(a.dtype), d.is_signed, d.itemsize, d.is_floating_point, a.element_size(),
                  a.is_signed()),
        "type": a.type(),
        "zeros": repr(lib.zeros(2, dtype=d)),
        "full": repr(lib.full((2,), 7, dtype=d)),
        "from_numpy": repr(lib.from_numpy(np.array([1, 2], dtype=name))),
        "numpy": str(a.numpy().dtype),
        "float": repr(a.float()),
        "to": repr(lib.tensor([1.7, 3.0]).to(d)),
        "long": repr(a.long()),
        "item": (a[1].item(), type(a[1].item()).__name__),
        "tolist": a.tolist(),
        "cat": repr(lib.cat([a, a])),
        "mul": repr(a * a),
        "div": repr(a / a),
        "float scalar": repr(a + 1.5),
        "0-d int32": repr(a * lib.tensor(2, dtype=lib.int32)),
        "result_type": str(lib.result_type(a, 2)),
        "promote float": str(lib.promote_types(d, lib.float32)),
        "sum": repr(a.sum()),
        "view": repr(a.view(other_int)),
        "iinfo": (lib.iinfo(d).max, lib.iinfo(d).min, lib.iinfo(d).bits),
    }


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_dtypes_match_torch(name):
    torch = pytest.importorskip("torch")
    mine, theirs = probe(tg, name), probe(torch, name)
    for key in theirs:
        assert mine[key] == theirs[key], key


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("other", ["int64", "uint8", "bool", "int16", "uint16", "uint32"])
def test_promotion_with_other_integers_is_refused(name, other):
    a = tg.tensor([1, 2], dtype=getattr(tg, name))
    b = tg.tensor([1, 0], dtype=getattr(tg, other))
    if other == name:
        assert (a * b).dtype == a.dtype
        return
    left = tg._core.scalar_type_name_of(np.dtype(name))
    right = tg._core.scalar_type_name_of(np.dtype(other))
    with pytest.raises(RuntimeError, match=f"Promotion for uint16, uint32, uint64 types is not "
                                           f"supported, attempted to promote {left} and {right}"):
        a * b
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        tg.promote_types(getattr(tg, name), getattr(tg, other))


def test_uint64_beyond_int64_range():
    t = tg.tensor([2 ** 64 - 1, 2 ** 63], dtype=tg.uint64)
    assert t.tolist() == [2 ** 64 - 1, 2 ** 63] and t.dtype is tg.uint64
    assert repr(t) == "tensor([18446744073709551615,  9223372036854775808], dtype=torch.uint64)"
