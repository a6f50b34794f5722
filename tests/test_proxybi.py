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


# -- index arrays that do not broadcast, and masks in masked_scatter: PyTorch's words ------------

I2, I3 = [0, 1], [0, 1, 2]


def _index_put(lib, key, value, accumulate=False, inplace=True):
    x = lib.zeros(3, 4)
    key = tuple(lib.tensor(k) for k in key)
    if inplace:
        return x.index_put_(key, lib.tensor(value), accumulate=accumulate)
    return x.index_put(key, lib.tensor(value), accumulate=accumulate)


@pytest.mark.parametrize("fn", [
    lambda lib: _index_put(lib, (I2, I3), 1.0),
    lambda lib: _index_put(lib, (I2, I3), 1.0, accumulate=True, inplace=False),
    lambda lib: _index_put(lib, ([0, 1], [True, False, True, True]), 1.0),
    _setter((3, 4), lambda lib: (lib.tensor(I2), lib.tensor(I3))),
    _setter((3, 4), lambda lib: (lib.tensor(I2), lib.tensor(I3)), lambda lib: lib.ones(2)),
    _setter((3, 4), lambda lib: (lib.tensor([[0], [1]]), lib.tensor([[0, 1, 2]] * 3))),
    _setter((3, 4), lambda lib: ([0, 1], [0, 1, 2])),
])
def test_index_arrays_that_do_not_broadcast(fn):
    kind, message = _same_error(fn)
    assert kind is IndexError and "indexing tensors" in message


@pytest.mark.parametrize("mask", [[True, False], [[True], [False]]])
def test_masked_scatter_mask_that_does_not_broadcast(mask):
    def out_of_place(lib):
        x = lib.arange(12.).reshape(3, 4)
        return x.masked_scatter(lib.tensor(mask), lib.ones(20))

    def in_place(lib):
        x = lib.arange(12.).reshape(3, 4)
        return x.masked_scatter_(lib.tensor(mask), lib.ones(20))

    for fn in (out_of_place, in_place):
        kind, _ = _same_error(fn)
        assert kind is RuntimeError


def test_masked_scatter_broadcast_mask_values_and_grad():
    results = []
    for lib in (tapegrad, torch):
        x = lib.arange(12., dtype=lib.float64).reshape(3, 4).requires_grad_()
        src = lib.arange(100., 120., dtype=lib.float64).requires_grad_()
        y = x.masked_scatter(lib.tensor([True, False, True, False]), src)
        (y * lib.arange(12., dtype=lib.float64).reshape(3, 4)).sum().backward()
        results.append((y.tolist(), x.grad.tolist(), src.grad.tolist()))
    assert results[0] == results[1]


def test_take_along_dim_shapes_that_do_not_broadcast():
    kind, _ = _same_error(lambda lib: lib.take_along_dim(lib.arange(12.).reshape(3, 4),
                                                          lib.tensor([[0, 1]]), dim=0))
    assert kind is RuntimeError
