"""Idioms of public beginner/intermediate PyTorch tutorial collections (task real48a: Korean,
Chinese and other non-English tutorial repositories), each compared with PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _close(ours, theirs, rtol=1e-5, atol=1e-6):
    assert str(ours.dtype) == str(theirs.dtype), (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


# Editors' auto-import writes `from torch._C import device` (dtype, Size, layout, ...): torch._C's
# public names are torch's top-level objects.
@pytest.mark.parametrize("name", ["device", "dtype", "Size", "layout", "memory_format", "qscheme",
                                  "finfo", "iinfo", "default_generator", "get_default_dtype",
                                  "get_num_threads", "is_grad_enabled", "Generator"])
def test_c_public_names_are_top_level_objects(name):
    assert getattr(torch._C, name) is getattr(torch, name)
    assert getattr(tg._C, name) is getattr(tg, name)
    ns = {}
    exec(f"from tapegrad._C import {name}", ns)
    assert ns[name] is getattr(tg, name)


def test_c_auto_import_device_in_use():
    from tapegrad._C import device as tg_device
    from torch._C import device as t_device
    assert str(tg.zeros(2, device=tg_device("cpu")).device) == str(torch.zeros(2, device=t_device("cpu")).device)
    assert repr(tg_device("cpu")) == repr(t_device("cpu"))


@pytest.mark.parametrize("name", ["int32", "float32", "nn", "Tensor", "tensor"])
def test_c_names_torch_lacks_stay_missing(name):
    assert not hasattr(torch._C, name)
    with pytest.raises(AttributeError):
        getattr(tg._C, name)
