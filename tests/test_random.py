"""tapegrad.random: Generator objects, seeding, state round trips, every sampling function and
in-place sampler (generator=, out=, dtype=, device=, requires_grad=), their statistics and their
errors compared with PyTorch's."""
import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import random as tgr


def _err(torch, fn):
    """The exception PyTorch raises for fn(torch) (None when it raises none)."""
    try:
        fn(torch)
    except Exception as e:  # noqa: BLE001  (the oracle's exception is the expectation)
        return e
    return None


def _same_error(torch, fn):
    """fn raises under tapegrad the exception type PyTorch raises, with PyTorch's message start."""
    expected = _err(torch, fn)
    assert expected is not None, "PyTorch accepted the call"
    with pytest.raises(type(expected)) as info:
        fn(tg)
    key = str(expected).split("\n")[0][:40]
    assert key in str(info.value), (str(info.value), str(expected))


# -- names and where they live ---------------------------------------------------------------------

def test_names_importable_from_old_and_new_places():
    from tapegrad.creation import (default_generator, manual_seed, normal, normal_, rand,  # noqa
                                   randint, randn, randperm, uniform_)
    assert isinstance(default_generator(), np.random.Generator)    # the core's dropout hook
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
                 "fork_rng", "Generator", "default_generator"):
        assert hasattr(tgr, name)
    for name in ("Generator", "default_generator", "manual_seed", "seed", "initial_seed",
                 "get_rng_state", "set_rng_state", "rand", "randn", "randint", "randperm",
                 "normal", "multinomial", "bernoulli", "poisson", "rand_like", "randn_like",
                 "randint_like"):
        assert hasattr(tg, name), name
    for name in ("uniform_", "normal_", "random_", "exponential_", "bernoulli_", "geometric_",
                 "log_normal_", "cauchy_", "multinomial", "bernoulli"):
        assert hasattr(tg.Tensor, name), name
    assert tg.manual_seed(1) is tg.default_generator
    assert isinstance(tg.default_generator, tg.Generator)


def test_torch_has_the_same_names(torch):
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
                 "fork_rng"):
        assert hasattr(torch.random, name)
    for name in ("uniform_", "normal_", "random_", "exponential_", "bernoulli_", "geometric_",
                 "log_normal_", "cauchy_"):
        assert hasattr(torch.Tensor, name)


# -- Generator --------------------------------------------------------------------------------------

def test_generator_basics():
    g = tg.Generator()
    assert g.device == tg._device.device("cpu")
    assert g.initial_seed() == 67280421310721           # PyTorch's default seed for a new one
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64
    assert tg.Generator("cpu").initial_seed() == 67280421310721


def test_generator_repr_matches_torch(torch):
    """A notebook cell ending in torch.manual_seed(1) displays the generator's repr."""
    import re
    for lib in (tg, torch):
        text = re.sub(r"0x[0-9a-f]+", "0x", repr(lib.manual_seed(1)))
        assert text == "<torch._C.Generator object at 0x>"
        assert re.sub(r"0x[0-9a-f]+", "0x", repr(lib.Generator())) == text


def test_generator_errors_match_torch(torch):
    _same_error(torch, lambda m: m.Generator(device="cuda"))
    for bad in (2 ** 64, -2 ** 63 - 1, 1.5, "1"):
        _same_error(torch, lambda m: m.Generator().manual_seed(bad))
    _same_error(torch, lambda m: m.Generator().set_state(m.zeros(3)))
    _same_error(torch, lambda m: m.Generator().set_state([1, 2]))
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 48 but found "
                                           "the input RNG state size to be 3"):
        tg.Generator().set_state(tg.zeros(3, dtype=tg.uint8))


def test_seeding_repeats_every_function():
    draws = (lambda g: tg.rand(3, generator=g), lambda g: tg.randn(2, 2, generator=g),
             lambda g: tg.randint(0, 100, (5,), generator=g),
             lambda g: tg.randperm(7, generator=g), lambda g: tg.normal(1.0, 2.0, (3,), generator=g),
             lambda g: tg.multinomial(tg.tensor([0.2, 0.3, 0.5]), 2, generator=g),
             lambda g: tg.bernoulli(tg.full((6,), 0.5), generator=g),
             lambda g: tg.poisson(tg.full((4,), 3.0), generator=g),
             lambda g: tg.zeros(4).exponential_(generator=g))
    for draw in draws:
        g = tg.Generator().manual_seed(11)
        first = draw(g).tolist()
        g.manual_seed(11)
        assert draw(g).tolist() == first
        tg.manual_seed(11)
        a = draw(None).tolist()
        tg.manual_seed(11)
        assert draw(None).tolist() == a


def test_generator_is_isolated_from_the_global_stream():
    tg.manual_seed(0)
    expected = tg.rand(4).tolist()
    tg.manual_seed(0)
    g = tg.Generator().manual_seed(0)
    tg.randn(100, generator=g)                          # draws from g only
    assert tg.rand(4).tolist() == expected
    g1, g2 = tg.Generator().manual_seed(3), tg.Generator().manual_seed(3)
    tg.rand(10)
    assert tg.rand(5, generator=g1).tolist() == tg.rand(5, generator=g2).tolist()


def test_state_round_trips_exactly():
    g = tg.Generator().manual_seed(42)
    tg.randn(3, generator=g)
    state = g.get_state()
    assert state.dtype == tg.uint8 and state.shape == (48,)
    a = tg.randn(5, generator=g).tolist() + tg.randint(10, (3,), generator=g).tolist()
    tg.rand(7, generator=g)
    g.set_state(state)
    assert tg.randn(5, generator=g).tolist() + tg.randint(10, (3,), generator=g).tolist() == a
    assert g.initial_seed() == 42
    other = tg.Generator().set_state(state)             # a state moves to another generator
    assert other.get_state().tolist() == state.tolist()
    # numpy's buffered 32-bit half-word is part of the state
    g.manual_seed(1)
    g._rng.integers(0, 2 ** 31, dtype=np.int32)
    s = g.get_state()
    x = g._rng.integers(0, 2 ** 31, size=3, dtype=np.int32).tolist()
    g.set_state(s)
    assert g._rng.integers(0, 2 ** 31, size=3, dtype=np.int32).tolist() == x


def test_global_state_functions_and_fork_rng():
    tg.manual_seed(7)
    assert tg.initial_seed() == 7
    state = tg.get_rng_state()
    a = tg.rand(3).tolist()
    tg.set_rng_state(state)
    assert tg.rand(3).tolist() == a
    tg.manual_seed(7)
    with tgr.fork_rng():
        tg.rand(50)
    assert tg.rand(3).tolist() == a
    with tgr.fork_rng(enabled=False):
        tg.rand(1)
    assert tg.rand(3).tolist() != a
    s = tg.seed()
    assert tg.initial_seed() == s


def test_dropout_draws_from_the_global_stream():
    x = tg.ones(200)
    tg.manual_seed(3)
    a = tg.nn.functional.dropout(x, 0.5).tolist()
    tg.manual_seed(3)
    assert tg.nn.functional.dropout(x, 0.5).tolist() == a


def test_dataloader_with_a_generator_repeats_its_order():
    from tapegrad.utils.data import DataLoader, RandomSampler, TensorDataset, random_split
    ds = TensorDataset(tg.arange(20))

    def order(gen):
        return [int(v) for (b,) in DataLoader(ds, batch_size=4, shuffle=True, generator=gen)
                for v in b.tolist()]

    a = order(tg.Generator().manual_seed(0))
    tg.rand(5)                                  # the global stream does not matter
    assert order(tg.Generator().manual_seed(0)) == a
    assert sorted(a) == list(range(20))
    g = tg.Generator().manual_seed(1)
    epochs = [list(RandomSampler(range(10), generator=g)) for _ in range(2)]
    assert epochs[0] != epochs[1]               # one stream over epochs, as PyTorch's
    parts = random_split(range(10), [3, 7], generator=tg.Generator().manual_seed(2))
    again = random_split(range(10), [3, 7], generator=tg.Generator().manual_seed(2))
    assert [list(p) for p in parts] == [list(p) for p in again]


def test_nn_init_accepts_a_generator():
    w1, w2 = tg.empty(3, 4), tg.empty(3, 4)
    tg.nn.init.kaiming_uniform_(w1, generator=tg.Generator().manual_seed(5))
    tg.nn.init.kaiming_uniform_(w2, generator=tg.Generator().manual_seed(5))
    assert w1.tolist() == w2.tolist()
    tg.nn.init.normal_(w1, generator=tg.Generator())


# -- factories ----------------------------------------------------------------------------------------

def test_factory_signatures_shapes_and_dtypes(torch):
    g = tg.Generator().manual_seed(0)
    cases = [
        lambda m: m.rand(2, 3),
        lambda m: m.rand((2, 3), dtype=m.float64),
        lambda m: m.rand([]),
        lambda m: m.rand(size=(4,)),
        lambda m: m.rand(2, dtype=m.float16),
        lambda m: m.randn(3, requires_grad=True, device="cpu"),
        lambda m: m.randint(5, (2, 2)),
        lambda m: m.randint(-3, 5, (4,), dtype=m.int8),
        lambda m: m.randint(low=2, high=9, size=(3,)),
        lambda m: m.randint(5, (3,), dtype=m.float32),
        lambda m: m.randperm(6),
        lambda m: m.randperm(4, dtype=m.float32, requires_grad=True),
        lambda m: m.normal(0.0, 1.0, (2, 3)),
        lambda m: m.normal(0.0, 1.0, size=(2,), dtype=m.float64, requires_grad=True),
        lambda m: m.normal(m.zeros(2, 3), m.ones(3)),
        lambda m: m.normal(m.zeros(2, 3), 2.0),
        lambda m: m.normal(0.0, m.ones(3)),
        lambda m: m.normal(m.zeros(2, dtype=m.float64), m.ones(2)),
        lambda m: m.rand_like(m.zeros(2, 3, dtype=m.float64)),
        lambda m: m.randn_like(m.zeros(2), dtype=m.float64),
        lambda m: m.randint_like(m.zeros(2), 5),
        lambda m: m.randint_like(m.zeros(2, dtype=m.int32), 3, 5),
        lambda m: m.multinomial(m.tensor([0.1, 0.2, 0.7]), 2),
        lambda m: m.multinomial(m.ones(2, 5), 7, True),
        lambda m: m.bernoulli(m.full((3,), 0.5)),
        lambda m: m.bernoulli(m.zeros(3, dtype=m.float64), 0.3),
        lambda m: m.poisson(m.tensor([1.0, 2.0])),
    ]
    for case in cases:
        ours, theirs = case(tg), case(torch)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype)
        assert ours.requires_grad == theirs.requires_grad
    assert tg.rand(3, generator=g).shape == (3,)


def test_factory_errors_match_torch(torch):
    cases = [
        lambda m: m.rand(),
        lambda m: m.rand(2, dtype=m.int64),
        lambda m: m.randn(2, dtype=m.int64),
        lambda m: m.rand(2, device="cuda"),
        lambda m: m.rand(2, generator=3),
        lambda m: m.rand(2, 3, out=m.empty(2, dtype=m.long)),
        lambda m: m.rand(2, dtype=m.float64, out=m.empty(2)),
        lambda m: m.rand(2, out=m.empty(2, requires_grad=True)),
        lambda m: m.randint(5, 3, (3,)),
        lambda m: m.randint(5, (2,), dtype=m.bool),
        lambda m: m.randint(-1, 5, (2,), dtype=m.uint8),
        lambda m: m.randint(0, 300, (2,), dtype=m.uint8),
        lambda m: m.randint(5, (2,), dtype=m.long, out=m.empty(2)),
        lambda m: m.randint(5, (2,), device="cuda"),
        lambda m: m.randperm(-1),
        lambda m: m.randperm(3, dtype=m.bool),
        lambda m: m.randperm(300, dtype=m.int8),
        lambda m: m.randperm(3000, dtype=m.float16),
        lambda m: m.randint(0, 2 ** 63, (2,)),
        lambda m: m.normal(m.zeros(2, 3), m.ones(4)),
        lambda m: m.normal(m.zeros(2), -m.ones(2)),
        lambda m: m.normal(m.zeros(2), -1.0),
        lambda m: m.normal(0.0, 1.0, (3,), device="cuda"),
        lambda m: m.rand_like(m.zeros(2, dtype=m.int64)),
    ]
    for case in cases:
        _same_error(torch, case)


def test_out_argument():
    out = tg.empty(5)
    r = tg.rand(2, 3, out=out)
    assert r is out and out.shape == (2, 3)
    o = tg.zeros(3)
    v = o._version_value if hasattr(o, "_version_value") else None
    tg.randn(3, out=o, generator=tg.Generator())
    assert o.tolist() != [0.0, 0.0, 0.0]
    if v is not None:
        assert o._version_value != v
    f = tg.empty(2)
    assert tg.randint(5, (2,), out=f) is f and f.dtype == tg.float32
    idx = tg.empty(3, dtype=tg.int64)
    assert tg.multinomial(tg.ones(4), 3, out=idx) is idx
    assert sorted(idx.tolist()) == sorted(set(idx.tolist()))
    p = tg.empty(4, dtype=tg.int64)
    assert sorted(tg.randperm(4, out=p).tolist()) == [0, 1, 2, 3]
    n = tg.empty(2, 2)
    assert tg.normal(tg.zeros(2, 2), 1.0, out=n) is n


def test_values_and_ranges():
    tg.manual_seed(0)
    u = tg.rand(20000).numpy()
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    h = tg.rand(50000, dtype=tg.float16).numpy()
    assert h.max() < 1                           # rounding to half never reaches 1
    z = tg.randn(20000, dtype=tg.float64).numpy()
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    n = tg.normal(2.0, 3.0, (20000,)).numpy()
    assert abs(n.mean() - 2) < 0.1 and abs(n.std() - 3) < 0.1
    m = tg.normal(tg.tensor([-5.0, 5.0]).expand(10000, 2).contiguous(), tg.tensor([1.0, 0.1]))
    np.testing.assert_allclose(m.numpy().mean(0), [-5, 5], atol=0.05)
    np.testing.assert_allclose(m.numpy().std(0), [1, 0.1], rtol=0.05)
    r = tg.randint(-3, 4, (10000,)).numpy()
    assert set(r.tolist()) == set(range(-3, 4))
    assert sorted(tg.randperm(50).tolist()) == list(range(50))
    assert tg.randint(2 ** 62, 2 ** 63 - 1, (10,)).numpy().min() >= 2 ** 62
    b = tg.randint(0, 2, (100,), dtype=tg.bool)
    assert b.dtype == tg.bool


def test_normal_tensor_arguments_get_zero_gradients():
    mean = tg.zeros(3, requires_grad=True)
    std = tg.ones(3, requires_grad=True)
    y = tg.normal(mean, std)
    assert y.grad_fn is not None
    y.sum().backward()
    assert mean.grad.tolist() == [0, 0, 0] and std.grad.tolist() == [0, 0, 0]


# -- multinomial -------------------------------------------------------------------------------------

def test_multinomial_errors_match_torch(torch):
    cases = [
        lambda m: m.multinomial(m.tensor([0.1, 0.2, 0.7]), 4),
        lambda m: m.multinomial(m.tensor([0.1, 0.2, 0.7]), 0),
        lambda m: m.multinomial(m.tensor([0.1, -0.2, 0.3]), 1),
        lambda m: m.multinomial(m.tensor([0.1, float("inf"), 0.3]), 1),
        lambda m: m.multinomial(m.tensor([0.1, float("nan"), 0.3]), 1),
        lambda m: m.multinomial(m.tensor([0.0, 0.0, 0.0]), 1),
        lambda m: m.multinomial(m.tensor([[1.0, 1.0], [0.0, 0.0]]), 1, True),
        lambda m: m.multinomial(m.tensor([1, 2, 3]), 1),
        lambda m: m.multinomial(m.tensor(1.0), 1),
        lambda m: m.multinomial(m.ones(2, 2, 2), 1),
        lambda m: m.multinomial(m.ones(3), -1),
    ]
    for case in cases:
        _same_error(torch, case)


def test_multinomial_values():
    tg.manual_seed(0)
    p = tg.tensor([0.1, 0.2, 0.0, 0.7])
    draws = tg.multinomial(p, 20000, True).numpy()
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.0, 0.7], atol=0.015)
    for _ in range(50):
        s = tg.multinomial(p, 3).tolist()
        assert len(set(s)) == 3 and 2 not in s
    # once the positive weights are exhausted, zero-weight categories fill in (as in PyTorch)
    assert sorted(tg.multinomial(p, 4).tolist()) == [0, 1, 2, 3]
    # without replacement the first draw follows the weights; unnormalised weights work
    firsts = np.bincount([tg.multinomial(tg.tensor([1.0, 3.0]), 2)[0].item() for _ in range(4000)])
    assert abs(firsts[1] / 4000 - 0.75) < 0.03
    rows = tg.multinomial(tg.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), 5, replacement=True)
    assert rows.tolist() == [[1] * 5, [0] * 5]
    assert tg.tensor([0.5, 0.5]).multinomial(2).shape == (2,)


# -- bernoulli / poisson -----------------------------------------------------------------------------

def test_bernoulli_and_poisson(torch):
    tg.manual_seed(1)
    p = tg.tensor([0.0, 0.25, 1.0]).expand(20000, 3).contiguous()
    b = tg.bernoulli(p).numpy()
    np.testing.assert_allclose(b.mean(0), [0, 0.25, 1], atol=0.015)
    assert tg.bernoulli(tg.zeros(5), 1.0).tolist() == [1.0] * 5
    assert tg.tensor([1.0, 0.0]).bernoulli().tolist() == [1.0, 0.0]
    lam = tg.tensor([0.0, 0.5, 4.0, 100.0]).expand(20000, 4).contiguous()
    k = tg.poisson(lam).numpy()
    np.testing.assert_allclose(k.mean(0), [0, 0.5, 4, 100], rtol=0.03, atol=0.01)
    np.testing.assert_allclose(k.var(0), [0, 0.5, 4, 100], rtol=0.06, atol=0.01)
    for case in (lambda m: m.bernoulli(m.tensor([1.5])),
                 lambda m: m.bernoulli(m.tensor([-0.5])),
                 lambda m: m.bernoulli(m.tensor([float("nan")])),
                 lambda m: m.bernoulli(m.tensor([1, 0])),
                 lambda m: m.bernoulli(m.zeros(2), 1.5),
                 lambda m: m.bernoulli(m.zeros(2, requires_grad=True), out=m.empty(2)),
                 lambda m: m.poisson(m.tensor([-1.0, 2.0])),
                 lambda m: m.poisson(m.tensor([1.0, float("nan")])),
                 lambda m: m.poisson(m.tensor([1, 2]))):
        _same_error(torch, case)


def test_bernoulli_poisson_gradients_are_zero():
    p = tg.tensor([0.3, 0.6], requires_grad=True)
    y = tg.bernoulli(p)
    assert y.requires_grad
    (y * 2).sum().backward()
    assert p.grad.tolist() == [0.0, 0.0]
    lam = tg.tensor([1.0, 2.0], requires_grad=True)
    tg.poisson(lam).sum().backward()
    assert lam.grad.tolist() == [0.0, 0.0]
    with tg.no_grad():
        assert not tg.bernoulli(p).requires_grad


# -- in-place samplers -------------------------------------------------------------------------------

_INPLACE = [("uniform_", (), {}), ("normal_", (), {}), ("random_", (), {}),
            ("random_", (5,), {}), ("random_", (3, 5), {}), ("exponential_", (), {}),
            ("bernoulli_", (), {}), ("bernoulli_", (0.3,), {}), ("geometric_", (0.3,), {}),
            ("log_normal_", (), {}), ("cauchy_", (), {})]


def test_inplace_samplers_follow_the_inplace_rules():
    for name, args, kwargs in _INPLACE:
        leaf = tg.zeros(4, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation"):
            getattr(leaf, name)(*args, **kwargs)
        with tg.no_grad():
            assert getattr(leaf, name)(*args, **kwargs) is leaf
        t = tg.zeros(4)
        v = t._version_value
        assert getattr(t, name)(*args, **kwargs) is t
        assert t._version_value > v
        # on a non-leaf in a graph: the result requires grad; the overwritten input gets zero
        x = tg.ones(4, requires_grad=True)
        y = x * 2
        getattr(y, name)(*args, **kwargs)
        assert y.requires_grad and y.grad_fn is not None
        (y * 3).sum().backward()
        assert x.grad.tolist() == [0.0] * 4


def test_inplace_samplers_with_generator_repeat():
    for name, args, kwargs in _INPLACE:
        a = getattr(tg.zeros(6), name)(*args, generator=tg.Generator().manual_seed(4), **kwargs)
        b = getattr(tg.zeros(6), name)(*args, generator=tg.Generator().manual_seed(4), **kwargs)
        assert a.tolist() == b.tolist(), name


def test_inplace_sampler_values():
    tg.manual_seed(2)
    n = 20000
    r = tg.zeros(n).random_(3, 6).numpy()
    assert set(r.tolist()) == {3.0, 4.0, 5.0}
    assert tg.zeros(n).random_().numpy().max() <= 2 ** 24
    assert set(tg.zeros(n, dtype=tg.bool).random_().tolist()) == {False, True}
    u8 = tg.zeros(n, dtype=tg.uint8).random_().numpy()
    assert u8.max() > 200
    assert tg.zeros(5, dtype=tg.int64).random_(to=4).numpy().max() < 4
    assert tg.zeros(5, dtype=tg.int64).random_(2, None).numpy().min() >= 2
    e = tg.zeros(n, dtype=tg.float64).exponential_(2.0).numpy()
    assert abs(e.mean() - 0.5) < 0.02
    gm = tg.zeros(n).geometric_(0.25).numpy()
    assert gm.min() >= 1 and abs(gm.mean() - 4) < 0.15
    ln = tg.zeros(n, dtype=tg.float64).log_normal_(0.0, 0.5).numpy()
    assert abs(np.log(ln).mean()) < 0.02 and abs(np.log(ln).std() - 0.5) < 0.02
    c = tg.zeros(n, dtype=tg.float64).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1) < 0.1
    assert abs(np.mean(np.abs(c - 1) < 2) - 0.5) < 0.02     # half the mass within one scale
    bt = tg.zeros(n).bernoulli_(tg.tensor(0.2)).numpy()
    assert abs(bt.mean() - 0.2) < 0.015
    assert set(tg.zeros(100, dtype=tg.int64).bernoulli_(0.5).tolist()) == {0, 1}
    un = tg.zeros(n).uniform_(-2, 3).numpy()
    assert un.min() >= -2 and un.max() < 3 and abs(un.mean() - 0.5) < 0.05


def test_inplace_sampler_errors_match_torch(torch):
    cases = [
        lambda m: m.zeros(6).random_(5, 3),
        lambda m: m.zeros(6, dtype=m.uint8).random_(300),
        lambda m: m.zeros(6, dtype=m.uint8).random_(-3, 5),
        lambda m: m.zeros(6, dtype=m.bool).random_(3),
        lambda m: m.zeros(6).random_(1.5),
        lambda m: m.zeros(6).random_(0, 2 ** 200),
        lambda m: m.zeros(6, dtype=m.float16).random_(2 ** 40),
        lambda m: m.zeros(6, dtype=m.bool).geometric_(0.5),
        lambda m: m.zeros(6).exponential_(0),
        lambda m: m.zeros(6).exponential_(-1),
        lambda m: m.zeros(6, dtype=m.long).exponential_(),
        lambda m: m.zeros(6).geometric_(0),
        lambda m: m.zeros(6).geometric_(1),
        lambda m: m.zeros(6).log_normal_(0, 0),
        lambda m: m.zeros(6, dtype=m.long).log_normal_(),
        lambda m: m.zeros(6).cauchy_(0, 0),
        lambda m: m.zeros(6, dtype=m.long).cauchy_(),
        lambda m: m.zeros(6).normal_(0, -1),
        lambda m: m.zeros(6).uniform_(2, 1),
        lambda m: m.zeros(2).bernoulli_(1.5),
        lambda m: m.zeros(2).bernoulli_(m.tensor([0.5, 2.5])),
        lambda m: m.zeros(6, dtype=m.long).normal_(),
    ]
    for case in cases:
        _same_error(torch, case)


def test_inplace_dtypes_match_torch(torch):
    for name, args, kwargs in _INPLACE:
        for dt in ("float32", "float64", "int64", "uint8"):
            def run(m):
                return getattr(m.zeros(5, dtype=getattr(m, dt)), name)(*args, **kwargs)
            expected = _err(torch, run)
            if expected is None:
                assert str(run(tg).dtype) == str(run(torch).dtype)
            else:
                with pytest.raises(type(expected)):
                    run(tg)


def test_randomized_factories_against_torch(torch):
    """Random shapes, dtypes and bounds: shape, dtype and range agree with PyTorch."""
    rng = np.random.default_rng(0)
    for _ in range(30):
        shape = tuple(int(s) for s in rng.integers(0, 4, size=rng.integers(0, 4)))
        low = int(rng.integers(-10, 10))
        high = low + int(rng.integers(1, 10))
        dt = ["int64", "int32", "float32", "float64"][rng.integers(4)]
        ours = tg.randint(low, high, shape, dtype=getattr(tg, dt))
        theirs = torch.randint(low, high, shape, dtype=getattr(torch, dt))
        assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
        if ours.numel():
            assert low <= ours.numpy().min() and ours.numpy().max() < high
        k = int(rng.integers(1, 5))
        w = rng.random((2, 5)) + 0.01
        assert tuple(tg.multinomial(tg.tensor(w), k).shape) == \
            tuple(torch.multinomial(torch.tensor(w), k).shape)


def test_geometric_mean_formula():
    p = 0.4
    tg.manual_seed(9)
    x = tg.zeros(30000, dtype=tg.float64).geometric_(p).numpy()
    assert math.isclose(x.mean(), 1 / p, rel_tol=0.03)


def test_refused_calls_leave_the_stream_alone():
    tg.manual_seed(6)
    expected = tg.rand(3).tolist()
    tg.manual_seed(6)
    for bad in (lambda: tg.rand(2, device="cuda"), lambda: tg.randint(5, (2,), requires_grad=True),
                lambda: tg.randperm(3, requires_grad=True), lambda: tg.zeros(2).normal_(0, -1),
                lambda: tg.zeros(2, requires_grad=True).uniform_(),
                lambda: tg.multinomial(tg.tensor([0.5, -1.0]), 1)):
        with pytest.raises((RuntimeError, AssertionError)):
            bad()
    assert tg.rand(3).tolist() == expected
