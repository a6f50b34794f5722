"""Regression tests from the tensor-snippet proxy task (session 33, proxybi): question-and-answer
style scripts (indexing, masking, printing, devices) and the errors they meet."""
import re

import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value), str(info.value)


def _same_error(fn):
    ours, theirs = _error(tapegrad, fn), _error(torch, fn)
    assert ours[0].__name__ == theirs[0].__name__
    assert ours[1] == theirs[1]
    return ours


# -- x[mask] = v with a mask that does not fit: PyTorch's message, not numpy's -------------------

def _setter(shape, key_fn, value=1.0):
    def fn(lib):
        x = lib.zeros(*shape)
        x[key_fn(lib)] = value(lib) if callable(value) else value
    return fn


T, F = True, False
MASK_KEYS = [
    ((3, 4), lambda lib: lib.tensor([T, F])),
    ((3, 4), lambda lib: (slice(None), lib.tensor([T, F, T]))),
    ((3, 4), lambda lib: (0, lib.tensor([T, F, T]))),
    ((3, 4), lambda lib: (None, lib.tensor([T, F]))),
    ((3, 4), lambda lib: (Ellipsis, lib.tensor([T, F, T]))),
    ((3, 4), lambda lib: lib.tensor([[T, F], [F, T]])),
    ((3, 4), lambda lib: (lib.tensor([0, 1]), lib.tensor([T, F]))),
    ((3, 4), lambda lib: (slice(1, 3), lib.tensor([T, F, T]))),
    ((3, 4), lambda lib: (True, lib.tensor([T, F]))),
    ((3, 4), lambda lib: lib.zeros(2, 2, 2, dtype=lib.bool)),
    ((2, 3, 4), lambda lib: (Ellipsis, lib.tensor([T, F]))),
    ((2, 3, 4), lambda lib: (0, Ellipsis, lib.tensor([T, F]))),
    ((2, 3, 4), lambda lib: (slice(None), lib.tensor([[T, F, T, F], [F, T, F, T]]))),
    ((2, 3, 4), lambda lib: (lib.tensor([T, F]), slice(None), lib.tensor([T, F, T]))),
]


@pytest.mark.parametrize("case", range(len(MASK_KEYS)))
def test_setitem_mismatched_mask_is_pytorchs_index_error(case):
    shape, key = MASK_KEYS[case]
    kind, message = _same_error(_setter(shape, key))
    assert kind is IndexError
    assert "boolean index did not match" not in message


def test_setitem_mismatched_mask_checked_before_the_value():
    # a value of another shape, and a one-element value (PyTorch's masked_fill_ path)
    _same_error(_setter((3, 4), lambda lib: lib.tensor([T, F]), lambda lib: lib.ones(2, 4)))
    _same_error(_setter((3, 4), lambda lib: lib.tensor([T, F]), lambda lib: lib.ones(1)))


def test_setitem_mismatched_byte_mask_names_the_shape_first():
    with pytest.warns(UserWarning):
        _same_error(_setter((3, 4), lambda lib: lib.tensor([1, 0], dtype=lib.uint8)))


def test_setitem_fitting_masks_still_write():
    for lib in (tapegrad, torch):
        x = lib.zeros(3, 4)
        x[:, lib.tensor([T, F, T, F])] = lib.tensor([1.0, 2.0])
        x[x > 1] += 5
        x[lib.tensor([F, T, F])] = 3.0
        assert x.tolist() == [[1.0, 0.0, 7.0, 0.0], [3.0] * 4, [1.0, 0.0, 7.0, 0.0]]


# -- device strings: PyTorch parses the string's form, then its type ------------------------------

@pytest.mark.parametrize("spec", ["float32", "Float32", "gpu0", "cuda:x", "cuda:01", "cuda:",
                                  "cpu ", ":0", "cpu:0:1", "", "gpu", "gpu:0", "CPU", "_x"])
def test_device_string_errors(spec):
    kind, message = _same_error(lambda lib: lib.device(spec))
    assert kind is RuntimeError
    _same_error(lambda lib: lib.ones(2).to(spec))


def test_tensor_to_a_dtype_name_string_is_an_invalid_device_string():
    kind, message = _same_error(lambda lib: lib.ones(2).to("float32"))
    assert re.fullmatch(r"Invalid device string: 'float32'", message)


def test_device_strings_that_parse():
    for spec in ["cpu", "cpu:0", "cpu:10", "meta", "cuda:0"]:
        assert str(tapegrad.device(spec)) == str(torch.device(spec))
    _same_error(lambda lib: lib.device("cpu:0", 0))
