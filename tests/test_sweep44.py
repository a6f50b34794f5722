"""Sweep 44: torch.finfo/iinfo (test_type_info.py), complex (test_complex.py), parametrizations
(nn/test_parametrization.py), per-sample gradients (test_expanded_weights.py) and lazy modules
(nn/test_lazy_modules.py), each compared against PyTorch."""
import copy
import pickle
import re

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


# ---- finfo / iinfo -------------------------------------------------------------------------

def test_finfo_no_argument_follows_default_dtype():
    for mod in (torch, tapegrad):
        mod.set_default_dtype(mod.float64)
        try:
            info = mod.finfo()
        finally:
            mod.set_default_dtype(mod.float32)
        assert info.eps == torch.finfo(torch.float64).eps
        assert info.dtype == "float64"
    assert tapegrad.finfo().dtype == torch.finfo().dtype == "float32"


def test_finfo_none_is_refused():
    with pytest.raises(TypeError, match="must be torch.dtype, not NoneType"):
        torch.finfo(None)
    with pytest.raises(TypeError, match="must be torch.dtype, not NoneType"):
        tapegrad.finfo(None)


@pytest.mark.parametrize("pytype", [float, complex, int, bool])
def test_type_info_of_python_types(pytype):
    for kind in ("finfo", "iinfo"):
        try:
            want = repr(getattr(torch, kind)(pytype))
        except TypeError as e:
            with pytest.raises(TypeError, match=re.escape(str(e))):
                getattr(tapegrad, kind)(pytype)
        else:
            assert repr(getattr(tapegrad, kind)(pytype)) == want


def test_iinfo_of_bfloat16_is_the_float_error():
    with pytest.raises(TypeError, match="requires an integer input type"):
        torch.iinfo(torch.bfloat16)
    with pytest.raises(TypeError, match="requires an integer input type"):
        tapegrad.iinfo(tapegrad.bfloat16)


def test_type_info_fields_are_read_only():
    for mod in (torch, tapegrad):
        f, i = mod.finfo(mod.float32), mod.iinfo(mod.int16)
        with pytest.raises(AttributeError, match="not writable"):
            f.eps = 1.0
        with pytest.raises(AttributeError, match="not writable"):
            i.max = 3
        with pytest.raises(AttributeError, match="no attribute 'foo'"):
            f.foo = 1
        assert f.eps == torch.finfo(torch.float32).eps and i.max == 32767
        with pytest.raises(TypeError, match="cannot pickle"):
            pickle.dumps(f)


# ---- complex views ---------------------------------------------------------------------------

def test_view_as_real_refuses_a_lazy_conjugate():
    for mod in (torch, tapegrad):
        z = mod.tensor([1 + 2j, 3 - 4j]).conj()
        with pytest.raises(RuntimeError, match="unresolved conjugated tensors"):
            mod.view_as_real(z)
        np.testing.assert_array_equal(mod.view_as_real(z.resolve_conj()).numpy(),
                                      [[1.0, -2.0], [3.0, 4.0]])


def test_view_as_complex_of_0d_names_the_dimension_count():
    for mod in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="must have one or more dimensions"):
            mod.view_as_complex(mod.tensor(1.0))
