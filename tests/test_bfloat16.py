"""torch.bfloat16 as a dtype with its limits; its tensors are tests/test_bf16.py's."""
import pickle

import pytest

import tapegrad as tg


def test_dtype_properties_match_torch(torch):
    ours, theirs = tg.bfloat16, torch.bfloat16
    assert repr(ours) == repr(theirs) == "torch.bfloat16"
    assert (ours.is_floating_point, ours.is_signed, ours.itemsize) == \
        (theirs.is_floating_point, theirs.is_signed, theirs.itemsize)
    fo, ft = tg.finfo(ours), torch.finfo(theirs)
    assert repr(fo) == repr(ft)
    for name in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(fo, name) == getattr(ft, name), name


def test_values_without_torch():
    b = tg.bfloat16
    assert b.is_floating_point and b.itemsize == 2 and b != tg.float32
    assert pickle.loads(pickle.dumps(b)) is b
    f = tg.finfo(b)
    assert (f.bits, f.eps, f.tiny, f.dtype) == (16, 0.0078125, 2.0 ** -126, "bfloat16")
    assert f.max == 3.3895313892515355e+38


@pytest.mark.parametrize("make", [
    lambda: tg.zeros(2, dtype=tg.bfloat16), lambda: tg.ones(2).to(tg.bfloat16),
    lambda: tg.ones(2).bfloat16(), lambda: tg.tensor([1.0], dtype=tg.bfloat16),
    lambda: tg.randn(2, dtype=tg.bfloat16), lambda: tg.arange(3, dtype=tg.bfloat16),
    lambda: tg.nn.Linear(2, 2).to(tg.bfloat16).weight, lambda: tg.ones(2).type(tg.bfloat16),
])
def test_every_way_in_makes_a_bfloat16_tensor(make):
    assert make().dtype is tg.bfloat16


def test_bfloat16_default_dtype_is_refused_naming_it():
    with pytest.raises(TypeError, match="bfloat16 the default dtype"):
        tg.set_default_dtype(tg.bfloat16)
    assert tg.get_default_dtype() == tg.float32
    assert tg.promote_types(tg.bfloat16, tg.float16) == tg.float32


def test_nanogpt_dtype_selection_path():
    # nanoGPT picks its dtype this way, then autocasts only on CUDA
    use_bf16 = tg.cuda.is_available() and tg.cuda.is_bf16_supported()
    name = "bfloat16" if use_bf16 else "float16"
    ptdtype = {"float32": tg.float32, "bfloat16": tg.bfloat16, "float16": tg.float16}[name]
    assert ptdtype is tg.float16
    with tg.amp.autocast(device_type="cpu", dtype=tg.bfloat16):
        assert (tg.ones(2, 2) @ tg.ones(2, 2)).dtype == tg.bfloat16
