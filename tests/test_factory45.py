"""The compiled fast paths of the factories' common calls (tapegrad/_factories.pyx) and the
quicker scalar reads of Tensor (float, int, bool, item, shape) and from_numpy.

Each fast path must give what the general path (the Python factory behind it) gives -- values bit
for bit, the random streams included, dtype, shape, requires_grad -- and what PyTorch gives; every
call it does not take (a bad size, a bad dtype, generator=, out=, layout=, pin_memory=, names=,
an unknown keyword ...) must reach the general path and its PyTorch errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _factories


def _general(fn):
    """`fn` (a public factory) with the fast paths off: the general path, which they must agree
    with."""
    def call(*args, **kwargs):
        _factories._set_enabled(False)
        try:
            return fn(*args, **kwargs)
        finally:
            _factories._set_enabled(True)
    return call


def _outcome(make):
    """(dtype, shape, bytes, requires_grad) of the result, or (exception type, message)."""
    try:
        t = make()
    except Exception as e:          # noqa: BLE001 - the exception is the outcome compared
        return type(e).__name__, str(e)
    return str(t.dtype), tuple(t.shape), t.detach().numpy().tobytes(), t.requires_grad


# (name, args, kwargs) with tapegrad's and torch's dtypes spelled by name: every form a fast path
# takes, and its neighbours that it must leave to the general path.
CALLS = [
    ("zeros", (3, 4), {}), ("zeros", ((3, 4),), {"dtype": "float64"}),
    ("zeros", ([2, 3],), {"dtype": "int64"}), ("zeros", ((),), {}), ("zeros", (0,), {}),
    ("zeros", (2,), {"requires_grad": True}), ("zeros", (2,), {"device": "cpu"}),
    ("zeros", (2,), {"layout": "strided"}), ("zeros", (2,), {"pin_memory": False}),
    ("ones", (2, 3), {"dtype": "bool"}), ("ones", (2,), {"dtype": "int32", "device": "cpu"}),
    ("ones", (1, 2), {"requires_grad": True, "dtype": "float16"}),
    ("empty", (2, 3), {"dtype": "uint8"}), ("empty", ((4,),), {"memory_format": None}),
    ("full", ((2, 3), 2.5), {}), ("full", ((2,), 7), {}), ("full", ([2], True), {}),
    ("full", ((2,), -0.0), {"dtype": "float64"}), ("full", ((2,), math.nan), {}),
    ("full", ((2,), 3), {"dtype": "float16"}), ("full", ((1,), 1e6), {"dtype": "float16"}),
    ("full", ((2,), 1e6), {"dtype": "float16"}), ("full", ((2,), 1e40), {}),
    ("full", ((2,), -200), {"dtype": "uint8"}), ("full", ((2,), 300), {"dtype": "int8"}),
    ("full", ((2,), 2 ** 63), {}), ("full", ((2,), 1.5), {"requires_grad": True}),
    ("arange", (10,), {}), ("arange", (2, 11, 3), {}), ("arange", (10, 2, -3), {}),
    ("arange", (0,), {}), ("arange", (-5,), {}), ("arange", (5,), {"dtype": "int64"}),
    ("arange", (5,), {"dtype": "float32"}), ("arange", (10.0,), {}),
    ("arange", (1.0, 7.0, 2.0), {"dtype": "float64"}), ("arange", (0.0, 1.0, 0.1), {}),
    ("arange", (5,), {"requires_grad": True}), ("arange", (5.0,), {"requires_grad": True}),
    ("arange", (0, 5, 0), {}), ("arange", (2 ** 24 + 3.0,), {"dtype": "float32"}),
    ("linspace", (0, 1, 5), {}), ("linspace", (-1.5, 2, 7), {"dtype": "float64"}),
    ("linspace", (3, 3, 2), {}), ("linspace", (0, 1, 1), {}), ("linspace", (0, 1, 0), {}),
    ("linspace", (0, 10, 4), {"dtype": "int64"}), ("linspace", (1e39, 0, 3), {}),
    ("linspace", (0.1, 0.7, 12), {"requires_grad": True}), ("linspace", (0, 1, -1), {}),
    ("eye", (3,), {}), ("eye", (2, 4), {"dtype": "int64"}), ("eye", (0,), {}),
    ("eye", (2,), {"requires_grad": True}),
    ("tensor", (2.5,), {}), ("tensor", (3,), {}), ("tensor", (True,), {}),
    ("tensor", (1e40,), {}), ("tensor", (-0.0,), {"dtype": "float64"}),
    ("tensor", (2.5,), {"requires_grad": True}), ("tensor", (2 ** 63,), {}),
    ("tensor", (3,), {"dtype": "float32"}), ("tensor", (3,), {"requires_grad": True}),
    ("tensor", ([1.0, 2, 3],), {"dtype": "float64"}), ("tensor", ([[1, 2], [3, 4]],), {"dtype": "float32"}),
    ("tensor", ([1e40, 1],), {"dtype": "float32"}), ("tensor", ([1, 2 ** 63],), {"dtype": "float64"}),
    ("tensor", ([[1.0], [2.0, 3.0]],), {"dtype": "float64"}), ("tensor", ([0.5],), {"dtype": "int64"}),
    ("tensor", ([0.5, 1.5],), {"dtype": "float64", "requires_grad": True}),
    ("tensor", ([1.0, 2, 3],), {}), ("tensor", ([[1, 2], [3, 4]],), {}),
    ("tensor", ([1e40, -0.0],), {}), ("tensor", ([1, 2],), {"requires_grad": True}),
    ("tensor", ([1.5, 2],), {"requires_grad": True}), ("tensor", ([1, 2 ** 63],), {}),
    ("tensor", ([[1, 2], [3]],), {}), ("tensor", ([True, 2],), {}), ("tensor", ([],), {}),
    ("as_tensor", ([1.0, 2.0],), {}), ("as_tensor", ([[1, 2]],), {"device": "cpu"}),
    ("as_tensor", (np.arange(3.0),), {}), ("as_tensor", (np.arange(3.0),), {"dtype": "float32"}),
    ("as_tensor", (np.zeros((0, 2)),), {}), ("as_tensor", ([1, 2],), {"dtype": "float64"}),
]

# The calls every fast path must leave to the general path, with PyTorch's errors.
REFUSED = [
    ("zeros", (2, -1), {}), ("zeros", (2.0,), {}), ("ones", (-1,), {}), ("empty", ((2, -3),), {}),
    ("zeros", (2,), {"dtype": "flt"}), ("ones", (2,), {"dtype": 5}), ("ones", (2,), {"dtype": float}),
    ("zeros", (2,), {"dtype": [1]}), ("rand", (2,), {"dtype": {}}), ("tensor", (2.5,), {"dtype": []}),
    ("zeros", (2,), {"dtype": "int64", "requires_grad": True}),
    ("ones", (2,), {"requires_grad": 1}), ("zeros", (2,), {"generator": None}),
    ("zeros", (2,), {"names": ("a",)}), ("ones", (2,), {"pin_memory": True}),
    ("empty", (2,), {"device": "cuda"}), ("zeros", (2,), {"layout": "sparse_coo_bad"}),
    ("full", (2, 1.0), {}), ("full", ((2,), "a"), {}), ("full", ((2.5,), 1.0), {}),
    ("full", ((2,), 1.0), {"dtype": "int64", "requires_grad": True}),
    ("rand", (2,), {"dtype": "int64"}), ("randn", (2, -1), {}), ("rand", (2.0,), {}),
    ("randn", (2,), {"generator": 3}), ("rand", (2,), {"names": None}),
    ("randint", (10, 0, (2,)), {}), ("randint", (0, 10, (2,)), {"requires_grad": True}),
    ("randint", (0, 10, (2,)), {"dtype": "flt"}), ("randint", (0, 10, (2, -1)), {}),
    ("randint", (0, 10, (2,)), {"dtype": "float32"}),
    ("randint", (0, 10, 5), {}), ("randint", (0, 300, (2,)), {"dtype": "uint8"}),
    ("arange", (1, 5), {"dtype": "bool"}), ("arange", (0, float("inf")), {}),
    ("arange", (5,), {"dtype": "int64", "requires_grad": True}), ("eye", (-1,), {}),
    ("eye", (2.0,), {}), ("linspace", (0, 1, 2.0), {}), ("tensor", ("a",), {}),
    ("tensor", (2.5,), {"layout": None}), ("tensor", ([1, None],), {"dtype": "float32"}),
]


def _args_for(lib, args, kwargs):
    """A call's keywords for `lib` (dtype and layout names read as lib's objects)."""
    kw = dict(kwargs)
    if isinstance(kw.get("dtype"), str) and hasattr(lib, kw["dtype"]):
        kw["dtype"] = getattr(lib, kw["dtype"])
    if kw.get("layout") == "strided":
        kw["layout"] = lib.strided
    return args, kw


@pytest.mark.parametrize("name,args,kwargs", CALLS + REFUSED, ids=repr)
def test_fast_path_matches_the_general_path_and_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    a, kw = _args_for(tg, args, kwargs)
    tg.manual_seed(0)
    got = _outcome(lambda: getattr(tg, name)(*a, **kw))
    tg.manual_seed(0)
    general = _outcome(lambda: _general(getattr(tg, name))(*a, **kw))
    if name != "empty":
        assert got == general
    else:
        assert got[0] == general[0] and got[1:2] == general[1:2]
    ta, tkw = _args_for(torch, args, kwargs)
    want = _outcome(lambda: getattr(torch, name)(*ta, **tkw))
    assert got[0] == want[0]        # the dtype, or the exception's type
    if len(want) == 4 and name not in ("empty", "arange", "linspace", "rand", "randn", "randint"):
        assert got == want
    elif len(want) == 4:
        assert got[1] == want[1] and got[3] == want[3]
        if name in ("arange", "linspace"):     # (ATen's last bits may depend on the CPU)
            dt = np.dtype(got[0].replace("torch.", ""))
            np.testing.assert_allclose(np.frombuffer(got[2], dt), np.frombuffer(want[2], dt),
                                       rtol=1e-6)


@pytest.mark.parametrize("name,args,kwargs", REFUSED, ids=repr)
def test_refused_calls_are_left_to_the_general_path(name, args, kwargs):
    a, kw = _args_for(tg, args, kwargs)
    assert _factories.FAST_PATHS[name](a, kw) is None


@pytest.mark.parametrize("name,args,kwargs", [
    ("zeros", (3, 4), {}), ("zeros", (tg.Size([2, 3]),), {"dtype": tg.float64}),
    ("full", ((2,), 1.5), {}), ("arange", (7,), {}), ("linspace", (0, 1, 5), {}),
    ("eye", (3,), {}), ("tensor", (2.5,), {}), ("rand", (3,), {}), ("randn", ((2, 2),), {}),
    ("randint", (0, 9, (4,)), {}),
])
def test_common_calls_take_the_fast_path(name, args, kwargs):
    tg.rand(1)          # (the global stream's numpy generator is made by the first draw)
    made = _factories.FAST_PATHS[name](args, kwargs)
    assert made is not None and type(made) is tg.Tensor


# -- the random streams ----------------------------------------------------------------------

RANDOM_CALLS = [
    ("randn", (3, 4), {}), ("randn", ((3, 4),), {"dtype": tg.float64}),
    ("randn", (5,), {"dtype": tg.float16}), ("randn", (tg.Size([2, 3]),), {"requires_grad": True}),
    ("randn", (300, 100), {}), ("rand", (3, 4), {}), ("rand", (3, 4), {"dtype": tg.float64}),
    ("rand", (100,), {"dtype": tg.float16}), ("rand", (20000,), {}),
    ("rand", (2,), {"generator": None, "device": "cpu"}),
    ("randint", (0, 10, (3, 4)), {}), ("randint", (10, [50]), {}),
    ("randint", (-5, 2 ** 40, (50,)), {}), ("randint", (-2 ** 62, 2 ** 62, (50,)), {}),
    ("randint", (0, 2 ** 32, (50,)), {}), ("randint", (0, 2 ** 32 + 1, (50,)), {}),
    ("randint", (3, 4, (9,)), {}), ("randint", (-2 ** 63 + 1, 2 ** 63 - 1, (50,)), {}),
    ("randint", (0, 10, (20000,)), {"dtype": tg.int64}),
    ("rand_like", (tg.ones(3, 4),), {}), ("randn_like", (tg.ones(3, dtype=tg.float64),), {}),
    ("randn_like", (tg.ones(3, 4),), {"dtype": tg.float64, "requires_grad": True}),
]


@pytest.mark.parametrize("name,args,kwargs", RANDOM_CALLS, ids=repr)
def test_seeded_draws_are_the_general_paths_bit_for_bit(name, args, kwargs):
    fast, general = getattr(tg, name), _general(getattr(tg, name))
    tg.rand(1)          # (the first draw makes the numpy generator the fast paths draw from)
    assert _factories.FAST_PATHS[name](args, kwargs) is not None
    outcomes = []
    for fn in (fast, general):
        tg.manual_seed(1234)
        first, second = fn(*args, **kwargs), fn(*args, **kwargs)
        after = tg.get_rng_state().numpy().tobytes()
        outcomes.append((_outcome(lambda: first), _outcome(lambda: second), after,
                         tg.rand(3).numpy().tobytes()))       # (the stream goes on alike)
    assert outcomes[0] == outcomes[1]


def test_mixed_draws_follow_one_stream():
    """rand, randn and randint interleaved (numpy's 32-bit buffer included) as the general
    path draws them."""
    def draw(lib_fn):
        tg.manual_seed(7)
        return [lib_fn(name)(*args).numpy().tobytes() for name, args in (
            ("randint", (0, 5, (3,))), ("rand", (3,)), ("randint", (0, 2 ** 40, (3,))),
            ("randn", (5,)), ("randint", (0, 7, (1,))), ("rand", (1,)))]
    assert draw(lambda n: getattr(tg, n)) == draw(lambda n: _general(getattr(tg, n)))


def test_random_values_are_in_range_and_of_torchs_dtypes():
    torch = pytest.importorskip("torch")
    tg.manual_seed(0)
    u, n, k = tg.rand(1000), tg.randn(1000, dtype=tg.float64), tg.randint(-3, 4, (1000,))
    assert 0 <= u.min().item() and u.max().item() < 1
    assert set(k.tolist()) == set(range(-3, 4))
    assert abs(n.mean().item()) < 0.2 and 0.8 < n.std().item() < 1.2
    for lib_u, lib_n, lib_k in [(u, n, k), (torch.rand(2), torch.randn(2, dtype=torch.float64),
                                            torch.randint(-3, 4, (2,)))]:
        assert (str(lib_u.dtype), str(lib_n.dtype), str(lib_k.dtype)) == \
            ("torch.float32", "torch.float64", "torch.int64")


# -- the state the fast paths must see ----------------------------------------------------------

def test_default_dtype_is_read_at_each_call():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        lib.set_default_dtype(lib.float64)
    try:
        for make in (lambda lib: lib.zeros(2), lambda lib: lib.full((2,), 0.1),
                     lambda lib: lib.tensor(0.1), lambda lib: lib.arange(3.0),
                     lambda lib: lib.linspace(0, 1, 3), lambda lib: lib.rand(2),
                     lambda lib: lib.eye(2)):
            assert str(make(tg).dtype) == str(make(torch).dtype) == "torch.float64"
    finally:
        for lib in (tg, torch):
            lib.set_default_dtype(lib.float32)


def test_meta_default_device_makes_meta_tensors():
    with tg.device("meta"):
        for t in (tg.zeros(2, 3), tg.randn(2), tg.arange(4), tg.tensor(2.5), tg.eye(2)):
            assert t.device.type == "meta"
    assert tg.zeros(2).device.type == "cpu"


def test_deterministic_empty_is_filled_as_pytorchs():
    torch = pytest.importorskip("torch")
    tg.use_deterministic_algorithms(True)
    try:
        assert math.isnan(tg.empty(2)[0].item()) and math.isnan(tg.empty_like(tg.ones(2))[0].item())
        assert tg.empty(2, dtype=tg.int64).tolist() == [2 ** 63 - 1] * 2
    finally:
        tg.use_deterministic_algorithms(False)
    torch.use_deterministic_algorithms(True)
    try:
        assert math.isnan(torch.empty(2)[0].item())
    finally:
        torch.use_deterministic_algorithms(False)


def test_like_factories_keep_inputs_layout_and_subclasses_go_general():
    torch = pytest.importorskip("torch")
    x = tg.ones(2, 3).t()               # (not row-major: the general path preserves its strides)
    tx = torch.ones(2, 3).t()
    for name in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
        assert getattr(tg, name)(x).stride() == getattr(torch, name)(tx).stride()
    p = tg.nn.Parameter(tg.ones(2))
    assert type(tg.zeros_like(p)) is tg.Tensor and not tg.zeros_like(p).requires_grad
    assert tg.full_like(tg.ones(2, dtype=tg.int64), 2.7).tolist() == \
        torch.full_like(torch.ones(2, dtype=torch.int64), 2.7).tolist()


# -- Tensor's scalar reads, shape, from_numpy -------------------------------------------------

def test_scalar_reads_match_torch():
    torch = pytest.importorskip("torch")
    for value, dtype in ((2.75, "float32"), (-3, "int64"), (True, "bool"), (1e300, "float64")):
        t = tg.tensor(value, dtype=getattr(tg, dtype))
        w = torch.tensor(value, dtype=getattr(torch, dtype))
        for read in (float, int, bool, lambda v: v.item(), lambda v: v.reshape(1, 1).item()):
            got, want = read(t), read(w)
            assert type(got) is type(want) and got == want
    for value in (1 + 0j, 2 + 1j, complex(math.nan, 0)):
        assert _read_outcome(tg.tensor(value)) == _read_outcome(torch.tensor(value))
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="only one element tensors"):
            float(lib.ones(2))
        with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
            lib.ones(2).item()


def _read_outcome(t):
    out = []
    for read in (float, int, complex):
        try:
            out.append(read(t))
        except Exception as e:      # noqa: BLE001
            out.append(type(e).__name__)
    return repr(out)


def test_float_of_a_tensor_requiring_grad_warns_once_as_torch():
    t = tg.tensor(1.5, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert float(t) == 1.5 and int(t) == 1
    assert len([w for w in caught if "requires_grad=True to a scalar" in str(w.message)]) <= 1


def test_shape_is_a_size_without_attributes():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        s = lib.zeros(2, 3).shape
        assert type(s) is lib.Size and s == (2, 3) and repr(s) == "torch.Size([2, 3])"
        with pytest.raises(AttributeError):
            s.anything = 1
    assert tg.zeros(2, 3).shape[1:] == tg.Size([3]) and tg.zeros(()).shape == ()


def test_as_tensor_of_an_array_shares_its_memory():
    a = np.arange(4.0)
    t = tg.as_tensor(a)
    a[1] = 7
    assert t[1].item() == 7 and tg.as_tensor(t) is t


def test_from_numpy_shares_and_keeps_its_refusals():
    torch = pytest.importorskip("torch")
    a = np.arange(6.0).reshape(2, 3)
    t = tg.from_numpy(a)
    a[0, 0] = 9
    assert t[0, 0].item() == 9 and t.dtype == tg.float64
    a.shape = (3, 2)
    assert t.shape == (2, 3)            # (a view of its own: the array's reshape leaves it)
    for arr in (np.arange(3.0)[::-1], np.zeros(2, dtype=">f4"), np.array(["a"])):
        assert _outcome(lambda: tg.from_numpy(arr))[0] == \
            _outcome(lambda: torch.from_numpy(arr))[0]
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (PyTorch's once-per-process warning: tested elsewhere)
        assert tg.from_numpy(ro).tolist() == [0.0, 1.0, 2.0]
    assert tuple(tg.from_numpy(np.zeros((0, 3))).stride()) == \
        tuple(torch.from_numpy(np.zeros((0, 3))).stride())
