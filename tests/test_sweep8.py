"""Regressions found by the eighth argument-form sweep (serialization, state dicts, module
utilities) against PyTorch."""
import io
import pickle
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _round_trip(lib, obj, **load_kwargs):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_kwargs)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 3)])
def test_save_load_round_trips_every_dtype(dtype, shape):
    # complex and the wide unsigned tensors were refused as "not a tensor dtype" at load
    for wo in (True, False):
        got = _round_trip(tg, tg.arange(int(np.prod(shape))).reshape(shape).to(getattr(tg, dtype)),
                          weights_only=wo)
        want = _round_trip(torch, torch.arange(int(np.prod(shape))).reshape(shape)
                           .to(getattr(torch, dtype)), weights_only=wo)
        assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_complex_tensor_requiring_grad_round_trips():
    t = _round_trip(tg, tg.tensor([1 + 2j, 3 - 1j], requires_grad=True))
    assert t.requires_grad and t.is_leaf and t.dtype == tg.complex64


_TORCH_WRITTEN = {
    "c64": lambda torch: torch.tensor([1 + 2j, -3j]),
    "c128": lambda torch: torch.tensor([[1 + 2j], [0.5j]], dtype=torch.complex128).t(),
    "u16": lambda torch: torch.arange(6).to(torch.uint16).reshape(2, 3)[:, 1:],
    "u32": lambda torch: torch.tensor([2**31 + 5], dtype=torch.uint32),
    "u64": lambda torch: torch.tensor([2**63 + 5], dtype=torch.uint64),
    "dtypes": lambda torch: [torch.float64, torch.complex64, torch.bool, torch.uint16],
    "device": lambda torch: {"dev": torch.device("cpu")},
}


@pytest.mark.parametrize("key", sorted(_TORCH_WRITTEN))
def test_reads_pytorch_files_of_more_dtypes(tmp_path, key):
    # complex storages, torch.<dtype> and torch.device globals and _rebuild_tensor_v3 over an
    # UntypedStorage (uint16/32/64) were refused by the PyTorch-checkpoint reader
    path = tmp_path / "t.pt"
    want = _TORCH_WRITTEN[key](torch)
    torch.save(want, path)
    got = tg.load(path)
    if isinstance(want, torch.Tensor):
        assert str(got.dtype) == str(want.dtype)
        assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        assert repr(got) == repr(want)
        assert got == {"dev": tg.device("cpu")} if key == "device" else got[0] is tg.float64


def test_pytorch_bfloat16_file_loads_as_bfloat16(tmp_path):
    path = tmp_path / "bf.pt"
    torch.save({"w": torch.tensor([0.1, -3.0], dtype=torch.bfloat16)}, path)
    w = tg.load(path)["w"]
    assert w.dtype is tg.bfloat16 and w.tolist() == [0.10009765625, -3.0]


def test_pytorch_untyped_storage_views_keep_sharing(tmp_path):
    # uint16 views of one UntypedStorage: offsets and sharing as PyTorch's (a byte-array view
    # made tapegrad see a reinterpreted copy: storage_offset 0, writes not shared)
    path = tmp_path / "u.pt"
    base = torch.arange(8).to(torch.uint16)
    torch.save([base, base[3:6]], path)
    a, b = tg.load(path)
    assert b.storage_offset() == 3
    a[4] = 100
    assert b.tolist() == [3, 100, 5]


def _error_type(fn):
    try:
        fn()
    except Exception as e:              # noqa: BLE001 - the type is what is compared
        return type(e).__name__, isinstance(e, EOFError), isinstance(e, pickle.UnpicklingError)
    return None


@pytest.mark.parametrize("data", [b"", b"garbage data here"])
def test_load_of_what_is_not_a_checkpoint_raises_pytorchs_types(data):
    # tapegrad raised its CheckpointError (a RuntimeError) where PyTorch raises EOFError for an
    # empty file and UnpicklingError for bytes that are no archive
    for wo in (True, False):
        got = _error_type(lambda: tg.load(io.BytesIO(data), weights_only=wo))
        want = _error_type(lambda: torch.load(io.BytesIO(data), weights_only=wo))
        assert got == want


@pytest.mark.parametrize("f", [5, None])
def test_save_and_load_of_a_non_file_raise_attribute_error(f):
    for lib in (torch, tg):
        with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file"):
            lib.save(lib.ones(1), f)
        if f is not None:
            with pytest.raises(AttributeError, match="has no attribute 'seek'"):
                lib.load(f)


def _backward_after_load(lib):
    m = lib.nn.Linear(2, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[1.0, -2.0], [0.5, 3.0]]))
    y = (m.weight ** 2).sum()
    m.load_state_dict({"weight": lib.zeros(2, 2), "bias": lib.zeros(2)})
    y.backward()
    return m.weight.grad


def test_load_state_dict_bumps_the_version_of_what_it_writes():
    # SILENT before: the copy bypassed the version counter, so a backward through a graph
    # recorded before the load used the loaded values (a zero gradient here) where PyTorch refuses
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _backward_after_load(lib)


def test_load_state_dict_casts_as_copy_does():
    def load(lib):
        m = lib.nn.Linear(2, 2)
        m.register_buffer("count", lib.tensor(0))
        m.load_state_dict({"weight": lib.tensor([[1, 2], [3, 4]]), "bias": lib.tensor([0.25, -1.5],
                           dtype=lib.float64), "count": lib.tensor(2.7)})
        return m.weight, m.bias, m.count
    for got, want in zip(load(tg), load(torch)):
        assert str(got.dtype) == str(want.dtype) and got.requires_grad == want.requires_grad
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def _module_to(lib, dtype_name):
    m = lib.nn.Linear(2, 1)
    m.register_buffer("c", lib.tensor([1 + 2j, -3j]))
    m.register_buffer("i", lib.tensor([1, 2]))
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[0.5, -1.5]]))
        m.bias.fill_(0.25)
    m(lib.ones(1, 2)).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.to(getattr(lib, dtype_name))
    return m


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float64", "float16"])
def test_module_to_casts_floating_and_complex_tensors(dtype):
    # to(complex) raised; to(float) left complex buffers complex (SILENT: PyTorch casts them)
    got, want = _module_to(tg, dtype), _module_to(torch, dtype)
    for name in ("weight", "bias", "c", "i"):
        g, w = getattr(got, name), getattr(want, name)
        assert str(g.dtype) == str(w.dtype), name
        assert g.requires_grad == w.requires_grad
        np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
    assert str(got.weight.grad.dtype) == str(want.weight.grad.dtype)
    assert isinstance(got.weight, tg.nn.Parameter)


def test_module_to_complex_warns_as_pytorch():
    for lib in (torch, tg):
        with pytest.warns(UserWarning, match="Complex modules are a new feature"):
            lib.nn.Linear(1, 1).to(lib.complex64)


def test_a_module_does_not_replace_a_parameter():
    # tapegrad registered the module over the parameter silently
    for lib in (torch, tg):
        m = lib.nn.Linear(1, 1)
        with pytest.raises(TypeError, match="cannot assign '.*Linear' as parameter 'weight'"):
            m.weight = lib.nn.Linear(1, 1)
        with pytest.raises(TypeError, match=r"cannot assign 'torch\.FloatTensor' object to "
                                            r"parameter 'p'"):
            m.register_parameter("p", lib.ones(1))


def test_load_state_dict_assign_collects_a_failed_assignment():
    # the Parameter's refusal of an int64 tensor escaped as a bare RuntimeError
    msgs = []
    for lib in (torch, tg):
        m = lib.nn.Linear(3, 2)
        with pytest.raises(RuntimeError) as info:
            m.load_state_dict({"weight": lib.ones(2, 3, dtype=lib.int64), "bias": lib.ones(2)},
                              assign=True)
        msgs.append(str(info.value).split(", an exception occurred")[0])
        assert str(m.weight.dtype) == "torch.float32"
    assert msgs[0] == msgs[1]


def test_load_state_dict_collects_a_failed_copy():
    # copying into inference tensors: the refusal goes into the collected message, as PyTorch's
    msgs = []
    for lib in (torch, tg):
        src = lib.nn.Linear(1, 1).state_dict()
        with lib.inference_mode():
            m = lib.nn.Linear(1, 1)
        with pytest.raises(RuntimeError) as info:
            m.load_state_dict(src)
        msgs.append(str(info.value)[:200])
    assert msgs[0] == msgs[1]


def _swalr_resumed(lib):
    def make(strategy):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        return opt, lib.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4,
                                              anneal_strategy=strategy)
    opt, sched = make("linear")
    opt.step()
    sched.step()
    buf = io.BytesIO()
    lib.save(sched.state_dict(), buf)          # weights-only loadable: no function inside
    buf.seek(0)
    opt2, sched2 = make("cos")
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(lib.load(buf))
    lrs = []
    for _ in range(3):
        opt2.step()
        sched2.step()
        lrs.append(opt2.param_groups[0]["lr"])
    return sorted(sched.state_dict()), lrs


def test_swalr_state_dict_keeps_the_strategy_not_the_function():
    # SILENT before: the state held the anneal function, not its name, so a weights-only load
    # refused it, and loading into a SWALR made with another strategy kept that one's ramp
    (got_keys, got), (want_keys, want) = _swalr_resumed(tg), _swalr_resumed(torch)
    assert got_keys == want_keys
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_first_of_two_checkpoints_in_one_file_loads():
    # SILENT before: zipfile reads the directory at the end of the file, so loading from
    # position 0 gave the second object (PyTorch reads the archive at the read position)
    for lib in (torch, tg):
        buf = io.BytesIO()
        lib.save(lib.ones(1), buf)
        lib.save({"w": lib.arange(3.0)}, buf)
        buf.seek(0)
        assert lib.load(buf).tolist() == [1.0]
    assert tg.load(buf)["w"].tolist() == [0.0, 1.0, 2.0]    # tapegrad: the next one follows


def test_a_checkpoint_after_other_bytes_still_loads():
    buf = io.BytesIO()
    buf.write(b"HEADER")
    tg.save(tg.arange(3.0), buf)
    buf.seek(6)
    assert tg.load(buf).tolist() == [0.0, 1.0, 2.0]


def test_load_argument_errors():
    for lib in (torch, tg):
        buf = io.BytesIO()
        lib.save(lib.ones(1), buf)
        buf.seek(0)
        with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
            lib.load(buf, mmap=True)
        with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"), \
                pytest.warns(UserWarning, match="pickle_load_args only works if"):
            lib.load(buf, foo=1)
        with pytest.raises(TypeError, match="'foo' is an invalid keyword argument"):
            lib.load(buf, foo=1, weights_only=False)
        buf.seek(0)
        assert lib.load(buf, encoding="latin1", weights_only=False).tolist() == [1.0]


def test_pytorch_conjugate_and_negative_views_load_with_their_values(tmp_path):
    # SILENT before: the view bits in the tensor's metadata were ignored, so a saved conj()
    # loaded as the unconjugated values and a conj().imag with the wrong sign
    z = torch.tensor([1 + 2j, -3 - 0.5j])
    for key, value in {"conj": z.conj(), "neg": z.conj().imag}.items():
        path = tmp_path / f"{key}.pt"
        torch.save(value, path)
        got = tg.load(path)
        want = torch.load(path).resolve_conj().resolve_neg()
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got.resolve_conj().numpy(), want.numpy())


def test_pytorch_tensors_with_attributes_and_layouts_load(tmp_path):
    t = torch.ones(2)
    t.tag = 3
    p = torch.nn.Parameter(torch.zeros(1))
    p.note = "x"
    path = tmp_path / "attrs.pt"
    torch.save({"t": t, "p": p, "layout": torch.strided}, path)
    got = tg.load(path)
    assert got["t"].tag == 3 and got["t"].tolist() == [1.0, 1.0]
    assert isinstance(got["p"], tg.nn.Parameter) and got["p"].requires_grad
    assert got["p"].note == "x"
    assert got["layout"] is tg.strided


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("writer", [torch, tg])
def test_map_location_callable_errors_pass_through(tmp_path, weights_only, writer):
    # a weights-only load reported the callable's own error as a corrupt file
    path = tmp_path / "m.pt"
    writer.save({"a": writer.ones(2)}, path)

    def refuse(storage, location):
        raise ValueError("not here")
    readers = (torch, tg) if writer is torch else (tg,)     # PyTorch cannot read tapegrad's
    for lib in readers:
        with pytest.raises(ValueError, match="not here"):
            lib.load(path, map_location=refuse, weights_only=weights_only)
        with pytest.raises(TypeError):
            lib.load(path, map_location=lambda s, loc: 5, weights_only=weights_only)
