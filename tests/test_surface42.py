"""Surface of small scripts (session 42): the idioms and beginner mistakes found missing or
different by measurement, each checked against PyTorch itself where it is installed."""
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _raised(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the exception itself is what is compared
        return type(e), str(e)
    return None


# ---- torch.tensor of a list holding a tensor of several elements -------------------------------
# PyTorch reads each item with the stored dtype's conversion: into an integer or bool dtype by
# __index__ (TypeError), into a float or complex one by float() (ValueError).

def _items(lib):
    return {
        "int": ([lib.tensor([1, 2])], None),
        "bool": ([lib.tensor([True, False])], None),
        "float": ([lib.tensor([1.0, 2.0])], None),
        "int32 nested": ([[lib.tensor([1, 2], dtype=lib.int32)]], None),
        "int into float": ([lib.tensor([1, 2])], lib.float32),
        "float into long": ([lib.tensor([1.0, 2.0])], lib.int64),
        "python float first": ([1.5, lib.tensor([1, 2])], None),
        "0-d float first": ([lib.tensor(1.0), lib.tensor([1, 2])], None),
        "0-d int first": ([lib.tensor(1), lib.tensor([1, 2])], None),
        "empty int": ([lib.tensor([], dtype=lib.int64)], None),
    }


@pytest.mark.parametrize("case", list(_items(torch)))
@pytest.mark.parametrize("ctor", ["tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor"])
def test_tensor_of_multi_element_tensor_items_raises_by_stored_dtype(case, ctor):
    if _items(torch)[case][1] is not None and ctor not in ("tensor", "as_tensor"):
        pytest.skip("the legacy constructors take no dtype")
    got = {}
    for lib in (torch, tapegrad):
        data, dtype = _items(lib)[case]
        f = getattr(lib, ctor)
        got[lib] = _raised(lambda: f(data, dtype=dtype) if dtype is not None else f(data))
    assert got[torch] is not None
    assert got[tapegrad] == got[torch]


def test_new_tensor_of_multi_element_int_tensor_item():
    want = _raised(lambda: torch.ones(2).new_tensor([torch.tensor([1, 2])]))
    got = _raised(lambda: tapegrad.ones(2).new_tensor([tapegrad.tensor([1, 2])]))
    assert got == want
    want = _raised(lambda: torch.ones(2, dtype=torch.long).new_tensor([torch.tensor([1., 2.])]))
    got = _raised(lambda: tapegrad.ones(2, dtype=tapegrad.long).new_tensor(
        [tapegrad.tensor([1., 2.])]))
    assert got == want


# ---- an index array out of range: PyTorch names its place among the index arrays --------------
# x[:, labels] with a label past the end is 'index 7 is out of bounds for dimension 0 with size
# 3' in PyTorch (the first index tensor), not the dim it indexes.

_OUT_OF_RANGE_KEYS = [
    "[:, [7]]", "[:, :, :, [9]]", "[[0], :, [9]]", "[:, [0], :, [9]]", "[..., [9]]",
    "[None, :, [7]]", "[0, :, [9]]", "[:, 0, [9]]", "[:, [[0, 7]]]", "[:, [-4]]",
    "[lib.tensor([True, False]), [7]]", "[:, lib.ones(3, 4, dtype=lib.bool), [9]]",
    "[:, [1], 1:2, [9]]", "[[1], ..., [9]]", "[:, [0, 1], [0, 1], [0, 9]]", "[1, [0], 0, [7]]",
    "[True, :, [4]]", "[[2]]",
]


@pytest.mark.parametrize("key", _OUT_OF_RANGE_KEYS)
@pytest.mark.parametrize("write", [False, True])
def test_index_array_out_of_range_names_its_place(key, write):
    got = {}
    for lib in (torch, tapegrad):
        x = lib.arange(120).view(2, 3, 4, 5)
        code = f"x{key} = 0" if write else f"x{key}"
        got[lib] = _raised(lambda: exec(code, {"x": x, "lib": lib}))
    assert got[torch] is not None and got[torch][0] is IndexError
    assert got[tapegrad] == got[torch]


# ---- keyword forms PyTorch's parser accepts: view(dtype=...), resize_(size=...) ----------------

def test_view_dtype_by_keyword():
    want = torch.ones(4).view(dtype=torch.int32)
    got = tapegrad.ones(4).view(dtype=tapegrad.int32)
    assert got.dtype == tapegrad.int32 and got.tolist() == want.tolist()
    assert tapegrad.ones(2).view(dtype=tapegrad.int64).tolist() == \
        torch.ones(2).view(dtype=torch.int64).tolist()
    for call in (lambda lib, x: x.view(4, dtype=lib.int32),
                 lambda lib, x: x.view(size=(4,), dtype=lib.int32),
                 lambda lib, x: x.view(dtype=4)):
        want = _raised(lambda: call(torch, torch.ones(4)))
        got = _raised(lambda: call(tapegrad, tapegrad.ones(4)))
        assert got[0] is want[0] is TypeError
        assert got[1].splitlines()[0] == want[1].splitlines()[0]


def test_resize_size_by_keyword():
    for lib in (torch, tapegrad):
        x = lib.arange(4.)
        assert tuple(x.resize_(size=(2, 2)).shape) == (2, 2)
        assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        assert tuple(x.resize_(size=[1, 4], memory_format=lib.contiguous_format).shape) == (1, 4)
    for call in (lambda x: x.resize_((2, 2), size=(2, 2)), lambda x: x.resize_(size=2)):
        want = _raised(lambda: call(torch.ones(4)))
        got = _raised(lambda: call(tapegrad.ones(4)))
        assert got == want
