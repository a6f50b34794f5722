"""Custom optimizers as research repositories write them (proxy corpus `proxycr`): the
multi-tensor helpers they import, Lookahead-style wrappers, Adam's foreach refusals, and the
16-bit linspace / logspace their bfloat16 scripts build data with.  PyTorch is the oracle."""
import random

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _sorted_groups(groups):
    return sorted(groups.items(), key=lambda kv: str(kv[0][1]))


# -- torch.utils._foreach_utils ---------------------------------------------------------------

def test_group_tensors_by_device_and_dtype_as_torch():
    from tapegrad.utils._foreach_utils import _group_tensors_by_device_and_dtype as tg_group
    from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype as torch_group
    for lib, group in ((tg, tg_group), (torch, torch_group)):
        a = [lib.ones(2), lib.ones(3, dtype=lib.float64), lib.zeros(1)]
        b = [lib.ones(2) * 2, None, lib.zeros(1)]
        result = _sorted_groups(group([a, b], with_indices=True))
        keys = [(str(dev), str(dt)) for (dev, dt), _ in result]
        shapes = [[[None if t is None else tuple(t.shape) for t in col] for col in cols]
                  for _, (cols, _) in result]
        indices = [idx for _, (_, idx) in result]
        assert keys == [("cpu", "torch.float32"), ("cpu", "torch.float64")]
        assert shapes == [[[(2,), (1,)], [(2,), (1,)]], [[(3,)], [None]]]
        assert indices == [[0, 2], [1]]
        # the grouped lists hold the caller's tensors: a foreach update reaches them
        (cols, _), = [v for k, v in group([a], False).items() if k[1] == lib.float32]
        assert cols[0][0] is a[0] and group([a], False)[(lib.device("cpu"), lib.float32)][1] == []


def test_group_tensors_errors_as_torch():
    cases = [lambda lib: lib._C._group_tensors_by_device_and_dtype([[None], [None]], True),
             lambda lib: lib._C._group_tensors_by_device_and_dtype([], False),
             lambda lib: lib._C._group_tensors_by_device_and_dtype([[]], False),
             lambda lib: lib._C._group_tensors_by_device_and_dtype([[lib.ones(1), lib.ones(1)],
                                                                   [lib.ones(1)]], False),
             lambda lib: lib._C._group_tensors_by_device_and_dtype([[lib.ones(1)], [1]], False)]
    for case in cases:
        outcomes = []
        for lib in (tg, torch):
            with pytest.raises((RuntimeError, TypeError)) as info:
                case(lib)
            outcomes.append((info.type, str(info.value).split("(")[0][:40]))
        assert outcomes[0] == outcomes[1]


def test_foreach_support_helpers_as_torch():
    import tapegrad.optim.optimizer as tg_opt
    import tapegrad.utils._foreach_utils as tg_utils
    import torch.optim.optimizer as torch_opt
    import torch.utils._foreach_utils as torch_utils
    assert tg_opt._get_foreach_kernels_supported_devices() == \
        torch_opt._get_foreach_kernels_supported_devices()
    assert tg_opt._get_fused_kernels_supported_devices() == \
        torch_opt._get_fused_kernels_supported_devices()
    # (importing torch.distributed.tensor appends DTensor to PyTorch's list)
    assert [t.__name__ for t in tg_opt._foreach_supported_types] == \
        [t.__name__ for t in torch_opt._foreach_supported_types][:2] == ["Tensor", "Parameter"]
    assert tg._C._get_privateuse1_backend_name() == torch._C._get_privateuse1_backend_name()
    for lib, utils in ((tg, tg_utils), (torch, torch_utils)):
        cpu = lib.device("cpu")
        assert utils._has_foreach_support([lib.ones(1), None], cpu)
        assert not utils._has_foreach_support([lib.nn.Parameter(lib.ones(1))], cpu)
        assert utils._device_has_foreach_support(cpu)


# -- Lookahead-style wrappers (never call Optimizer.__init__) ----------------------------------

def _wrapper_outcomes(lib):
    """What each use of a Lookahead-like wrapper gives: the step's result or the error."""
    class Lookahead(lib.optim.Optimizer):
        def __init__(self, base):
            self.optimizer, self.param_groups = base, base.param_groups
            self.state, self.defaults = base.state, base.defaults

        def step(self, closure=None):
            return self.optimizer.step(closure)

    class Named(Lookahead):
        pass

    def attempt(fn):
        try:
            fn()
            return "ok"
        except AttributeError as e:
            return str(e).split(".")[0]

    w = lib.nn.Parameter(lib.tensor([1.0]))
    w.grad = lib.tensor([1.0])
    first = Lookahead(lib.optim.SGD([w], lr=0.5))
    outcomes = [attempt(first.step)]            # before any zero_grad: PyTorch's step unwrapped
    first.zero_grad(set_to_none=False)           # wraps Lookahead.step in PyTorch
    outcomes += ["_zero_grad_profile_name" in vars(first), attempt(first.step)]
    outcomes.append(attempt(Lookahead(lib.optim.SGD([w], lr=0.5)).step))   # any instance now
    outcomes.append(attempt(Named(lib.optim.SGD([w], lr=0.5)).step))       # inherited step too
    outcomes.append(list(vars(lib.optim.SGD([w], lr=0.1))))
    return outcomes, w.item()


def test_lookahead_wrapper_step_wrapped_as_torch():
    mine, theirs = _wrapper_outcomes(tg), _wrapper_outcomes(torch)
    assert mine == theirs
    assert mine[0][2] == "'Lookahead' object has no attribute '_optimizer_step_pre_hooks'"


def test_wrapper_delegating_attributes_runs_inner_hooks_as_torch():
    """A wrapper whose __getattr__ hands out the inner optimizer's attributes: once its class is
    wrapped, PyTorch's step runs the inner optimizer's hooks (read through __getattr__)."""
    logs = []
    for lib in (tg, torch):
        log = []

        class Delegating(lib.optim.Optimizer):
            def __init__(self, base):
                self.optimizer = base

            def __getattr__(self, name):
                return getattr(self.__dict__["optimizer"], name)

            def step(self, closure=None):
                log.append("step")
                return self.optimizer.step(closure)

        w = lib.nn.Parameter(lib.tensor([1.0]))
        base = lib.optim.SGD([w], lr=0.5)
        base.register_step_pre_hook(lambda o, a, k: log.append(type(o).__name__))
        wrapper = Delegating(base)
        w.grad = lib.tensor([1.0])
        wrapper.step()
        Delegating.zero_grad(wrapper)
        w.grad = lib.tensor([1.0])
        wrapper.step()
        logs.append(log)
    assert logs[0] == logs[1]


# -- Adam's multi-tensor path refuses tensor hyperparameters -----------------------------------

@pytest.mark.parametrize("make", [
    lambda lib, w: lib.optim.Adam([w], lr=lib.tensor(0.1), foreach=True),
    lambda lib, w: lib.optim.AdamW([w], lr=lib.tensor(0.1), foreach=True),
    lambda lib, w: lib.optim.Adam([w], betas=(lib.tensor(0.9), lib.tensor(0.99)), foreach=True),
    lambda lib, w: lib.optim.Adam([w], betas=(lib.tensor([0.9]), lib.tensor(0.99))),
])
def test_adam_foreach_tensor_hyperparameters_as_torch(make):
    outcomes = []
    for lib in (tg, torch):
        w = lib.nn.Parameter(lib.ones(2))
        try:
            opt = make(lib, w)
            w.grad = lib.ones(2)
            opt.step()
            outcomes.append(("ok", w.tolist()))
        except (ValueError, RuntimeError) as e:
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("change", [
    lambda lib, g: g.__setitem__("lr", lib.tensor(0.1)),
    lambda lib, g: g.__setitem__("betas", (lib.tensor(0.9), 0.99)),
    lambda lib, g: g.__setitem__("betas", (0.9, lib.tensor(0.99))),
])
def test_adam_foreach_tensor_hyperparameter_set_later_refused_at_step(change):
    outcomes = []
    for lib in (tg, torch):
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.Adam([w], foreach=True)
        change(lib, opt.param_groups[0])
        opt.step()                       # (no gradient: nothing gathered, nothing refused)
        w.grad = lib.ones(2)
        with pytest.raises((ValueError, RuntimeError)) as info:
            opt.step()
        outcomes.append((info.type, str(info.value), w.tolist()))
    assert outcomes[0] == outcomes[1]


# -- 16-bit linspace and narrow-float logspace (were SILENTLY off by several ulps) -------------

def _spaced_cases(count, seed):
    rng = random.Random(seed)
    cases = [(-1, 1, 12), (0, 1000, 7), (0, 1, 2), (3, 3, 5), (-5, 5, 600)]
    return cases + [(rng.uniform(-100, 100), rng.uniform(-100, 100), rng.randint(2, 400))
                    for _ in range(count)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_linspace_sixteen_bit_matches_torch_bit_for_bit(dtype):
    for start, end, steps in _spaced_cases(60, 0):
        mine = tg.linspace(start, end, steps, dtype=getattr(tg, dtype)).float().tolist()
        theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).float().tolist()
        assert mine == theirs, (start, end, steps)
    # the case a bfloat16 training script met: x[5] was -0.0908, PyTorch's -0.09375
    assert tg.linspace(-1, 1, 12, dtype=tg.bfloat16)[5].item() == -0.09375


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_logspace_narrow_floats_match_torch_bit_for_bit(dtype):
    rng = random.Random(1)
    for start, end, steps in _spaced_cases(40, 2):
        base = rng.choice([10.0, 2.0, 0.5, 2.718281828459045])
        start, end = start / 25, end / 25
        mine = tg.logspace(start, end, steps, base=base, dtype=getattr(tg, dtype)).float().tolist()
        theirs = torch.logspace(start, end, steps, base=base,
                                dtype=getattr(torch, dtype)).float().tolist()
        assert mine == theirs, (start, end, steps, base)


def test_sixteen_bit_spaced_factories_keep_their_other_behaviour():
    for lib in (tg, torch):
        x = lib.linspace(lib.tensor(0.0), lib.tensor(1.0), 5, dtype=lib.bfloat16,
                         requires_grad=True)
        assert x.requires_grad and x.is_leaf and x.dtype == lib.bfloat16
        assert lib.linspace(2, 3, 1, dtype=lib.bfloat16).tolist() == [2.0]
        assert lib.logspace(0, 1, 0, dtype=lib.float16).shape == (0,)
    with pytest.raises(RuntimeError, match="0-dimensional"):
        tg.linspace(tg.ones(2), 1.0, 3, dtype=tg.bfloat16)
