"""Sweep 24: views and indexing against PyTorch's test_view_ops.py and test_indexing.py (view
geometry, aliasing, writes through views, index/put forms and their errors); each case is
checked against torch."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _layout(t):
    return tuple(t.shape), t.stride(), t.storage_offset()


# -- storage_offset of a tensor reinterpreting its storage ------------------------------------

@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(10, dtype=lib.complex64)[5:].imag,
    lambda lib: lib.zeros(10, dtype=lib.complex64)[5:].real,
    lambda lib: lib.zeros(10, dtype=lib.complex128).imag,
    lambda lib: lib.view_as_real(lib.zeros(4, 3, dtype=lib.complex64)[1:]),
    lambda lib: lib.zeros(2, 5, 16)[1::2, 1:, ::2].view(lib.int32),
    lambda lib: lib.zeros(4, 5)[1:, 1:].view(lib.int32),
    lambda lib: lib.zeros(4, 6)[1:, 2:].view(lib.int16),
    lambda lib: lib.zeros(4, 6, dtype=lib.int16)[1:, 2:].view(lib.float32),
])
def test_storage_offset_through_dtype_views(make):
    # the offset counted in the view's own elements from the storage's start (it was 0: the
    # helper behind it gave a reinterpreting view a copy of its own)
    assert _layout(make(tapegrad)) == _layout(make(torch))


# -- x[None]: the new dim's stride ------------------------------------------------------------

@pytest.mark.parametrize("key", [
    (None,), (slice(None), None), (None, slice(None, 2), 3), (None, slice(None, None, 2)),
    (Ellipsis, None), (None, None), (slice(None), None, None), (Ellipsis, None, None),
    (3, None), (None, Ellipsis, 1), (slice(1, None), None, slice(None, None, 2)),
])
def test_none_index_gives_unsqueeze_stride(key):
    # numpy's newaxis has stride 0; PyTorch's unsqueeze gives size * stride of the next dim
    want = torch.arange(25.).reshape(5, 5)[key]
    got = tapegrad.arange(25.).reshape(5, 5)[key]
    assert _layout(got) == _layout(want)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_none_index_of_expanded_and_scalar():
    for lib_make in (lambda lib: lib.ones(5, 1).expand(5, 3)[None],
                     lambda lib: lib.tensor(2.)[None, None],
                     lambda lib: lib.ones(4, 6).t()[:, None]):
        assert _layout(lib_make(tapegrad)) == _layout(lib_make(torch))


def test_none_index_view_writes_through_and_grad():
    t = tapegrad.ones(5, 5)
    v = t[None, :2, 3]
    assert v._base is t
    v[0, 1] = 0
    assert t[1, 3].item() == 0
    x = tapegrad.arange(6., requires_grad=True)
    (x.reshape(2, 3)[None, :, None, 1:] * tapegrad.tensor(2.)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 2, 2, 0, 2, 2])


def test_view_as_real_shares_the_storage_object():
    # the real view's memory was a stride-tricks buffer: its untyped_storage() started at the
    # view's first element, not at the complex tensor's storage
    for lib in (torch, tapegrad):
        x = lib.zeros(4, 3, dtype=lib.complex64)
        v = lib.view_as_real(x[1:].t())
        assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert v._base is x
        v[0, 1, 1] = 5.
        assert x[2, 0].item() == 5j


# -- view(dtype) to a wider dtype: PyTorch's layout checks ------------------------------------

def _error_or_layout(fn):
    try:
        out = fn()
    except RuntimeError as e:
        return str(e)
    return tuple(out.shape), out.stride(), out.storage_offset(), out.numpy().tolist()


@pytest.mark.parametrize("make", [
    # (a view numpy would make reading across element boundaries; PyTorch refuses it)
    lambda lib: lib.arange(80, dtype=lib.int8).reshape(4, 4, 5)[:, :, 1:].view(lib.int32),
    lambda lib: lib.arange(64, dtype=lib.int8).reshape(4, 4, 4).as_strided(
        (4, 4, 4), (4, 1, 1)).view(lib.int32),
    lambda lib: lib.arange(128, dtype=lib.int8).reshape(4, 4, 8).as_strided(
        (4, 4, 4), (8, 3, 1)).view(lib.int16),
    lambda lib: lib.arange(128, dtype=lib.int8).reshape(4, 4, 8)[:, :, 1::2].view(lib.int16),
    lambda lib: lib.arange(128, dtype=lib.int8).reshape(4, 4, 8)[:, 1:, ::2].view(lib.int16),
    lambda lib: lib.arange(128, dtype=lib.int8).reshape(4, 4, 8).as_strided(
        (4, 4, 4), (8, 3, 2), 0).view(lib.int16),
    lambda lib: lib.arange(96, dtype=lib.int8).reshape(4, 4, 6)[:, :, ::2].view(lib.int16),
    # allowed ones
    lambda lib: lib.arange(128, dtype=lib.int8).reshape(4, 4, 8)[:, 1:, 2:6].view(lib.int16),
    lambda lib: lib.arange(128, dtype=lib.int8).reshape(4, 4, 8)[1:, ::2, 4:].view(lib.int32),
    lambda lib: lib.arange(32, dtype=lib.int16).reshape(4, 8)[1:].view(lib.int8),
])
def test_view_dtype_upsize_checks(make):
    assert _error_or_layout(lambda: make(tapegrad)) == _error_or_layout(lambda: make(torch))


def test_view_dtype_of_empty():
    # an empty tensor's numpy strides are 0: the stride(-1) check refused it
    for src, dst in (("float64", "int16"), ("int16", "int64"), ("float32", "complex64")):
        want = torch.empty(0, 5, 8, dtype=getattr(torch, src)).view(getattr(torch, dst))
        got = tapegrad.empty(0, 5, 8, dtype=getattr(tapegrad, src)).view(getattr(tapegrad, dst))
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype) == str(want.dtype)


# -- assigning t.real / t.imag ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("src", ["float32", "float64", "int64", "uint8", "bool", "complex64"])
def test_set_real_imag(dtype, src):
    # (the properties had no setter: AttributeError)
    def run(lib):
        x = lib.complex(lib.arange(10.), -lib.arange(10.)).to(getattr(lib, dtype))
        x.real = (lib.arange(10) % 3).to(getattr(lib, src))
        x.imag = (lib.arange(10) % 4).to(getattr(lib, src))
        return x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (a complex source: the cast's warning)
        got = run(tapegrad)
        want = run(torch)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_set_real_imag_numbers_errors_and_real_tensors():
    for lib in (torch, tapegrad):
        x = lib.zeros(3, dtype=lib.complex64)
        x.real = 2
        x.imag = lib.tensor([1, 2, 3])
        assert x.tolist() == [2 + 1j, 2 + 2j, 2 + 3j]
        y = lib.zeros(3)
        y.real = lib.ones(3)
        assert y.tolist() == [1., 1., 1.]
        with pytest.raises(TypeError, match="can't assign a str to a torch.FloatTensor"):
            x.real = "a"
        with pytest.raises(RuntimeError, match="imag is not implemented"):
            y.imag = lib.ones(3)
        with pytest.raises(RuntimeError, match="must match the size"):
            x.real = lib.ones(4)


@pytest.mark.parametrize("part", ["real", "imag"])
def test_set_part_gradients(part):
    def run(lib):
        a = lib.complex(lib.arange(3., dtype=lib.float64),
                        0.5 - lib.arange(3., dtype=lib.float64)).requires_grad_()
        b = a * 1
        r = lib.tensor([1., -2., 3.], dtype=lib.float64, requires_grad=True)
        setattr(b, part, r * 2)
        (b.abs() * lib.arange(3.)).sum().backward()
        return b.detach().numpy(), r.grad.numpy(), a.grad.numpy(), type(b.grad_fn).__name__
    got, want = run(tapegrad), run(torch)
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert got[3] == want[3]


# -- a complex source written into a real tensor ----------------------------------------------

@pytest.mark.parametrize("write", [
    lambda lib, x, c: x.copy_(c),
    lambda lib, x, c: x.__setitem__(slice(1, None), c[1:]),
    lambda lib, x, c: x.__setitem__(Ellipsis, c),
    lambda lib, x, c: lib.zeros(3, dtype=lib.complex64).real.copy_(c),
])
def test_complex_into_real_warns_once_as_pytorch(write, fresh_once_warnings):
    # PyTorch's one-time UserWarning; numpy's ComplexWarning (a RuntimeWarning) came at every
    # write, so `-W error::UserWarning`-style filters and warn-once counts differed
    x = tapegrad.zeros(3)
    c = tapegrad.tensor([1 + 1j, 2j, 3 - 1j])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        write(tapegrad, x, c)
        write(tapegrad, x, c)
    assert [type(w.message) for w in seen] == [UserWarning]
    assert "discards the imaginary part" in str(seen[0].message)


def test_complex_into_real_gradient():
    def run(lib):
        x = lib.zeros(3, requires_grad=True)
        c = lib.tensor([1 + 1j, 2j, 3.], requires_grad=True)
        y = x * 1
        y[1:] = c[1:]
        z = x * 1
        z.copy_(c)
        (y * lib.arange(3.) + z * lib.tensor([5., 6., 7.])).sum().backward()
        return c.grad.numpy(), x.grad.numpy(), y.detach().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = run(tapegrad), run(torch)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# -- ravel: contiguous().view(-1) -------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(10.)[::2],
    lambda lib: lib.arange(6.).reshape(2, 3).t(),
    lambda lib: lib.arange(6.).reshape(2, 3)[:, 1:],
    lambda lib: lib.arange(6.).reshape(2, 3),
    lambda lib: lib.tensor(3.),
])
def test_ravel_copies_a_noncontiguous_input(make):
    # SILENT: ravel of a 1-d strided input was reshape(-1), a view of the input, so a write
    # into the result reached the input; PyTorch's ravel is contiguous().view(-1)
    def run(lib):
        source = make(lib)
        flat = source.ravel()
        facts = (flat.is_contiguous(), flat.stride(), flat._base is source)
        flat[0] = 100.
        return facts, source.numpy().tolist()
    assert run(tapegrad) == run(torch)


def test_ravel_gradient():
    for lib in (torch, tapegrad):
        x = lib.arange(6., requires_grad=True)
        y = x.reshape(2, 3).t().ravel()
        (y * lib.arange(6.)).sum().backward()
        assert y.grad_fn.name() == "ViewBackward0"
        assert x.grad.tolist() == [0., 2., 4., 1., 3., 5.]


# -- mT / mH / adjoint of a 0-d tensor ---------------------------------------------------------

@pytest.mark.parametrize("op", ["mT", "mH", "adjoint"])
@pytest.mark.parametrize("value", [2., 1 + 2j])
def test_matrix_transposes_of_0d_are_identity_with_warning(op, value):
    # PyTorch 2.13 deprecates them on 0-d tensors and returns the tensor (conjugated for
    # mH / adjoint); tapegrad raised "only supported on matrices"
    def run(lib):
        x = lib.tensor(value)
        y = x.adjoint() if op == "adjoint" else getattr(x, op)
        return y is x, y.resolve_conj().item()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (PyTorch's warning: once per process)
        want = run(torch)
    with pytest.warns(UserWarning, match="deprecated on 0-D tensors"):
        got = run(tapegrad)
    assert got == want


# -- resize_ / resize_as_ with memory_format ----------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib, x: x.resize_((2, 3, 2, 2), memory_format=lib.channels_last),
    lambda lib, x: x.resize_((2, 3, 2, 2, 1), memory_format=lib.channels_last_3d),
    lambda lib, x: x.resize_((2, 3, 4), memory_format=lib.contiguous_format),
    lambda lib, x: x.resize_as_(lib.empty(2, 3, 2, 2).contiguous(memory_format=lib.channels_last),
                                memory_format=lib.preserve_format),
    lambda lib, x: x.resize_as_(lib.empty(2, 3, 2, 2).contiguous(memory_format=lib.channels_last)),
    lambda lib, x: x.reshape(2, 3, 2, 2).resize_((2, 3, 2, 2), memory_format=lib.channels_last),
    lambda lib, x: x[:12].resize_((1, 3, 2, 2), memory_format=lib.channels_last),
])
def test_resize_lays_out_the_storage_in_the_memory_format(call):
    # SILENT: memory_format was ignored, so the storage's elements were read row-major where
    # PyTorch reads them channels-last (x[0, :, 0, 0] was 0, 4, 8 instead of 0, 1, 2)
    def run(lib):
        x = lib.arange(24.)
        y = call(lib, x)
        return y.stride(), y.numpy().tolist(), y.data_ptr() == x.data_ptr()
    assert run(tapegrad) == run(torch)


@pytest.mark.parametrize("call", [
    lambda lib: lib.arange(24.).resize_((2, 3, 4), memory_format=lib.channels_last),
    lambda lib: lib.arange(24.).resize_((2, 3, 4), memory_format=lib.preserve_format),
    lambda lib: lib.empty((), dtype=lib.float64).resize_([2, 4, 2**29, 2**29]),
    lambda lib: lib.empty((), dtype=lib.float64).resize_([8, 8, 2**29, 2**29]),
])
def test_resize_errors(call):
    # (the last was numpy's ValueError: its int64 product wrapped round to 0)
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(tapegrad)
    assert str(got.value).split(" (")[0] == str(want.value).split(" (")[0]


# -- indexing odds and ends ---------------------------------------------------------------------

def test_del_item_is_a_type_error():
    # (Cython's default slot raised NotImplementedError)
    for lib in (torch, tapegrad):
        x = lib.zeros(3)
        with pytest.raises(TypeError, match="Tensor does not support deleting items"):
            del x[0]


@pytest.mark.parametrize("call", [
    lambda lib, y, m: y.index_put_((m,), y[m], accumulate=True),
    lambda lib, y, m: y.index_put_((m,), lib.full((2, 10), 2.)),
    lambda lib, y, m: lib.index_put(y, (m,), lib.full((10,), 3.)),
])
def test_index_put_with_a_byte_mask_warns_each_call(call):
    def run(lib):
        y = lib.ones(10, 10)
        m = lib.tensor([1, 0, 0, 0, 0, 0, 0, 0, 0, 1], dtype=lib.uint8)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = call(lib, y, m)
        assert all("indexing with dtype torch.uint8 is now deprecated" in str(w.message)
                   for w in seen)
        return len(seen), out.numpy().tolist()
    assert run(tapegrad) == run(torch)


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "int32", "int64"])
def test_zero_dim_integer_index_of_any_integer_dtype_selects(dtype):
    # a 0-d int8/int16 tensor was refused ("must be long, int, byte or bool"); PyTorch reads
    # any 0-d integer tensor as the integer (a uint8 one as a mask); a 1-d one of a small
    # integer dtype is refused, by x[idx] = v too (which numpy indexing had accepted)
    def run(lib):
        x = lib.arange(6).view(2, 3)
        out = []
        for idx in (lib.tensor(1, dtype=getattr(lib, dtype)),
                    lib.tensor([1, 0], dtype=getattr(lib, dtype))):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")     # (uint8: a deprecated mask)
                    got = x[idx]
                    out.append((got.tolist(), got._is_view(), x[0, idx].tolist()))
                    y = x.clone()
                    y[idx] = 9
                    out.append(y.tolist())
            except IndexError as e:
                out.append(str(e))
        return out
    assert run(tapegrad) == run(torch)


@pytest.mark.parametrize("key", [slice(None), (slice(None), None), (0,), (0, 1, 2)])
@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_setitem_index_errors_in_pytorch_words(key, shape):
    def message(lib):
        x = lib.zeros(shape)
        try:
            x[key] = 8.
        except IndexError as e:
            return str(e)
        return x.tolist()
    assert message(tapegrad) == message(torch)


def test_index_put_with_no_indices_is_refused():
    # numpy read an empty key as the whole tensor and wrote it; PyTorch refuses
    for lib in (torch, tapegrad):
        for x, accumulate in ((lib.tensor(1.), True), (lib.tensor(1.), False),
                              (lib.ones(3), True)):
            with pytest.raises(RuntimeError):
                x.index_put([], lib.tensor([1.0]), accumulate)


@pytest.mark.parametrize("key", [1 << 64, -(1 << 64), 1 << 63, (0, 1 << 64), (1 << 64,),
                                 (slice(0, 1, 0), 1, 2), 2, -1, 5])
def test_index_beyond_int64(key):
    # PyTorch unpacks an int index as a C long long: ValueError beyond it (numpy's was an
    # IndexError, an OverflowError for 2**63), after counting the key's dims
    def outcome(lib, write):
        x = lib.zeros(3)
        try:
            if write:
                x[key] = 1.
            else:
                x[key]
        except (IndexError, ValueError) as e:
            return type(e).__name__, str(e)
        return "ok"
    for write in (False, True):
        assert outcome(tapegrad, write) == outcome(torch, write)


@pytest.mark.parametrize("shape", [lambda lib: lib.tensor([1, 2, 3]), (1, 2, 2.0), [1, True], "ab",
                                   2.0, lambda lib: (1, lib.tensor(2)), None, (2, -3)])
def test_unravel_index_shape_checks(shape):
    def outcome(lib):
        s = shape(lib) if callable(shape) else shape
        try:
            return [t.tolist() for t in lib.unravel_index(lib.tensor([1]), s)]
        except (TypeError, ValueError) as e:
            return type(e).__name__, str(e)
    assert outcome(tapegrad) == outcome(torch)


# -- the *_copy variants' nodes -----------------------------------------------------------------

_COPY_VARIANTS = {
    "view_copy": lambda lib, x: lib.view_copy(x, (12,)),
    "view_copy_of_t": lambda lib, x: lib.view_copy(x.t(), (12,)),
    "t_copy": lambda lib, x: lib.t_copy(x),
    "permute_copy": lambda lib, x: lib.permute_copy(x, (1, 0)),
    "diagonal_copy": lambda lib, x: lib.diagonal_copy(x),
    "select_copy": lambda lib, x: lib.select_copy(x, 0, 1),
    "slice_copy": lambda lib, x: lib.slice_copy(x, 0, 1, 2),
    "unsqueeze_copy": lambda lib, x: lib.unsqueeze_copy(x, 0),
    "expand_copy": lambda lib, x: lib.expand_copy(x, (2, 3, 4)),
    "as_strided_copy": lambda lib, x: lib.as_strided_copy(x, (2, 2), (1, 1)),
    "detach_copy": lambda lib, x: lib.detach_copy(x),
    "alias_copy": lambda lib, x: lib.alias_copy(x),
    "unfold_copy": lambda lib, x: lib.unfold_copy(x, 1, 2, 1),
    "view_as_real_copy": lambda lib, x: lib.view_as_real_copy(lib.complex(x, x)),
    "split_with_sizes_copy": lambda lib, x: lib.split_with_sizes_copy(x, [1, 2])[1],
    "unbind_copy": lambda lib, x: lib.unbind_copy(x)[2],
}


@pytest.mark.parametrize("name", sorted(_COPY_VARIANTS))
def test_copy_variant_grad_fn_names(name):
    # (each was CloneBackward0; PyTorch names the view's node with "_copy")
    def run(lib):
        x = lib.arange(12., dtype=lib.float64, requires_grad=True).reshape(3, 4)
        y = _COPY_VARIANTS[name](lib, x)
        return y.grad_fn.name(), y.detach().numpy().tolist(), y.is_contiguous()
    assert run(tapegrad) == run(torch)


def test_view_as_complex_copy_refuses_grad():
    for lib in (torch, tapegrad):
        r = lib.arange(8., requires_grad=True).reshape(4, 2)
        with pytest.raises(RuntimeError, match="does not support automatic differentiation"):
            lib.view_as_complex_copy(r)
        with lib.no_grad():
            assert lib.view_as_complex_copy(r).tolist() == [0 + 1j, 2 + 3j, 4 + 5j, 6 + 7j]


def test_copy_variant_gradient():
    for lib in (torch, tapegrad):
        x = lib.arange(12., dtype=lib.float64, requires_grad=True)
        y = lib.permute_copy(x.view(3, 4), (1, 0))
        (y * y).sum().backward()
        assert x.grad.tolist() == [2. * v for v in range(12)]


# -- expand's strides -----------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(5).expand(1, 1, 5),
    lambda lib: lib.ones(1).expand(1, 4),
    lambda lib: lib.ones(3, 1).expand(2, 1, 3, 4),
    lambda lib: lib.ones(()).expand(1, 2),
    lambda lib: lib.ones(()).expand(1),
    lambda lib: lib.ones(2, 3)[:, :1].expand(1, 2, 5),
    lambda lib: lib.ones(1, 1, 3).expand(1, 4, 3),
    lambda lib: lib.broadcast_to(lib.ones(3), (1, 3)),
    lambda lib: lib.broadcast_tensors(lib.ones(3), lib.ones(1, 1, 3))[1],
    lambda lib: lib.ones(4, 6).t().expand(1, 6, 4),
])
def test_expand_strides_of_size_one_dims(make):
    # numpy's broadcast_to gives every size-1 dim stride 0; PyTorch keeps an unstretched
    # dim's stride and gives a new leading one the size times the stride of the next
    got, want = make(tapegrad), make(torch)
    assert (tuple(got.shape), got.stride()) == (tuple(want.shape), want.stride())


def test_expand_is_still_a_read_only_shared_view():
    t = tapegrad.arange(3.)
    v = t.expand(1, 2, 3)
    assert v._base is t and v.data_ptr() == t.data_ptr()
    x = tapegrad.arange(3., requires_grad=True)
    (x.expand(1, 4, 3) * tapegrad.arange(12.).view(1, 4, 3)).sum().backward()
    assert x.grad.tolist() == [18., 22., 26.]


@pytest.mark.parametrize("shapes", [((-1,),), ((2, -1), (2, 1)), ((1,), (-2,)), ((3,), (-1,)),
                                    ((-1,), (3,)), ((1, -12),), ((-1,), (1, -12)), ((2, 0), (1, 0)),
                                    (3, (1, 3))])
def test_broadcast_shapes_negative_sizes(shapes):
    # a negative size was broadcast into the result; PyTorch's ValueError (after its mismatch
    # check)
    def outcome(lib):
        try:
            return tuple(lib.broadcast_shapes(*shapes))
        except (RuntimeError, ValueError) as e:
            return type(e).__name__, str(e)
    assert outcome(tapegrad) == outcome(torch)


@pytest.mark.parametrize("key", [0, "tensor0", (0,), slice(None), "tensor1d", [0]])
def test_zero_dim_index_messages(key):
    def outcome(lib):
        k = {"tensor0": lib.tensor(0), "tensor1d": lib.tensor([0])}.get(key, key) \
            if isinstance(key, str) else key
        try:
            lib.tensor(2.5)[k]
        except IndexError as e:
            return str(e)
    assert outcome(tapegrad) == outcome(torch)


@pytest.mark.parametrize("shape", [1.1, 2.0, None, (2,), 3, [2]])
def test_broadcast_shapes_argument_types(shape):
    def outcome(lib):
        try:
            return tuple(lib.broadcast_shapes(shape, (1,)))
        except RuntimeError as e:
            return str(e)
    assert outcome(tapegrad) == outcome(torch)
