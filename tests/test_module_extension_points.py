"""nn.Module's state extension points: get/set_extra_state, _save_to_state_dict /
_load_from_state_dict overrides, state_dict and load_state_dict pre/post hooks (call order,
arguments, return values, handle removal) - each scenario runs on tapegrad and on PyTorch and
the records must match."""
from __future__ import annotations

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _vals(sd):
    """A state dict as plain data: keys, nested lists for tensors, other values as they are."""
    return [(k, v.tolist() if hasattr(v, "tolist") else v) for k, v in sd.items()]


def _fill(M, module):
    """Deterministic values in every parameter and buffer (same on both libraries)."""
    with M.no_grad():
        for i, (_, t) in enumerate(sorted(module.state_dict(keep_vars=True).items())):
            if isinstance(t, M.Tensor) and t.is_floating_point():
                t.copy_(M.arange(t.numel(), dtype=t.dtype).reshape(t.shape) * 0.5 + i)


def _both(scenario):
    got, want = scenario(tg), scenario(torch)
    assert got == want
    return got


def _extra_state(M):
    class Counter(M.nn.Linear):
        def __init__(self):
            super().__init__(2, 1)
            self.steps = 7

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    net = M.nn.Sequential(Counter(), M.nn.ReLU())
    _fill(M, net)
    sd = net.state_dict()
    other = M.nn.Sequential(Counter(), M.nn.ReLU())
    other[0].steps = 0
    res = other.load_state_dict(sd)
    out = [list(sd), sd["0._extra_state"], other[0].steps, repr(res)]
    # strict load without the entry reports it missing; non-strict reports it
    try:
        other.load_state_dict({k: v for k, v in sd.items() if k != "0._extra_state"})
    except RuntimeError as e:
        out.append(str(e))
    r = other.load_state_dict({k: v for k, v in sd.items() if k != "0._extra_state"},
                              strict=False)
    out.append((r.missing_keys, r.unexpected_keys))
    # a module that does not override set_extra_state: the key is unexpected
    plain = M.nn.Sequential(M.nn.Linear(2, 1), M.nn.ReLU())
    r = plain.load_state_dict(sd, strict=False)
    out.append((r.missing_keys, r.unexpected_keys))
    for fn, args in ((M.nn.Linear(1, 1).get_extra_state, ()),
                     (M.nn.Linear(1, 1).set_extra_state, (1,))):
        with pytest.raises(RuntimeError) as e:
            fn(*args)
        out.append(str(e.value))
    return out


def test_extra_state_saved_and_restored():
    out = _both(_extra_state)
    assert out[1] == {"steps": 7} and out[2] == 7


def _save_load_overrides(M):
    log = []

    class Renamed(M.nn.Module):
        """Saves its parameter under another name, as a layout-changing subclass would."""

        def __init__(self):
            super().__init__()
            self.w = M.nn.Parameter(M.zeros(2))

        def _save_to_state_dict(self, destination, prefix, keep_vars):
            log.append(("save", prefix, keep_vars))
            destination[prefix + "weight_v2"] = self.w if keep_vars else self.w.detach()

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            log.append(("load", prefix, sorted(state_dict), local_metadata, strict))
            key = prefix + "weight_v2"
            if key in state_dict:
                with M.no_grad():
                    self.w.copy_(state_dict[key])
            else:
                missing_keys.append(key)
            if prefix + "junk" in state_dict:
                unexpected_keys.append(prefix + "junk")
                error_msgs.append("junk seen")

    net = M.nn.Sequential(M.nn.Linear(1, 1), M.nn.Sequential(Renamed()))
    sd = net.state_dict()
    log.append(list(sd))
    log.append(sd._metadata.get("1.0"))
    sd["1.0.weight_v2"] = M.tensor([3.0, 4.0])
    log.append(repr(net.load_state_dict(sd)))
    log.append(net[1][0].w.tolist())
    log.append(repr(net.load_state_dict({k: v for k, v in sd.items() if "weight_v2" not in k},
                                        strict=False)))
    sd["1.0.junk"] = 1
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    log.append(str(e.value))
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd, strict=False)        # error_msgs raise even when not strict
    log.append(str(e.value))
    return log


def test_save_and_load_overrides_per_module():
    log = _both(_save_load_overrides)
    assert ("save", "1.0.", False) in log


def _state_dict_hooks(M):
    log = []
    net = M.nn.Sequential(M.nn.Linear(2, 1), M.nn.Sequential(M.nn.Linear(1, 1)))
    _fill(M, net)
    hs = [
        net.register_state_dict_pre_hook(lambda m, p, kv: log.append(("pre0", p, kv))),
        net[1].register_state_dict_pre_hook(lambda m, p, kv: log.append(("pre1", p, kv))),
        net[1][0].register_state_dict_post_hook(
            lambda m, sd, p, md: log.append(("post10", p, list(sd), md))),
        net.register_state_dict_post_hook(
            lambda m, sd, p, md: log.append(("post0", p, list(sd), md))),
    ]

    def drop_bias(m, sd, p, md):
        del sd[p + "bias"]                          # in-place edits are kept

    hs.append(net[0].register_state_dict_post_hook(drop_bias))
    log.append(list(net.state_dict(keep_vars=True)))
    log.append(list(net.state_dict(prefix="model.")))
    for h in hs:
        h.remove()
    log.append(list(net.state_dict()))
    # a public post-hook must not return a value; the private one may replace the dict
    bad = M.nn.Linear(1, 1)
    bad.register_state_dict_post_hook(lambda m, sd, p, md: {"x": 1})
    with pytest.raises(RuntimeError) as e:
        bad.state_dict()
    log.append(str(e.value))
    priv = M.nn.Linear(1, 1)
    priv._register_state_dict_hook(lambda m, sd, p, md: {"replaced": 1})
    log.append(dict(priv.state_dict()))

    def public(m, sd, p, md):
        return None

    twice = M.nn.Linear(1, 1)
    twice.register_state_dict_post_hook(public)
    with pytest.raises(RuntimeError) as e:
        twice._register_state_dict_hook(public)
    log.append(str(e.value))
    return log


def test_state_dict_hooks_order_arguments_and_removal():
    log = _both(_state_dict_hooks)
    assert log[0] == ("pre0", "", True)


def _load_hooks(M):
    log = []
    src = M.nn.Sequential(M.nn.Linear(2, 1), M.nn.Sequential(M.nn.Linear(1, 1)))
    _fill(M, src)
    sd = src.state_dict()
    net = M.nn.Sequential(M.nn.Linear(2, 1), M.nn.Sequential(M.nn.Linear(1, 1)))

    def pre(m, state_dict, prefix, md, strict, missing, unexpected, errors):
        log.append(("pre", type(m).__name__, prefix, sorted(state_dict), strict))
        if prefix + "old_bias" in state_dict:       # a pre-hook renames a legacy key
            state_dict[prefix + "bias"] = state_dict.pop(prefix + "old_bias")

    def post(m, keys):
        log.append(("post", type(m).__name__, list(keys.missing_keys),
                    list(keys.unexpected_keys)))
        if "extra" in keys.unexpected_keys:       # in-place edits decide a strict load
            keys.unexpected_keys.remove("extra")

    hs = [net[0].register_load_state_dict_pre_hook(pre),
          net[1][0].register_load_state_dict_pre_hook(pre),
          net.register_load_state_dict_post_hook(post),
          net[1].register_load_state_dict_post_hook(post)]
    legacy = dict(sd)
    legacy["0.old_bias"] = legacy.pop("0.bias")
    legacy["extra"] = M.zeros(1)
    log.append(repr(net.load_state_dict(legacy)))
    log.append(_vals(net.state_dict()) == _vals(sd))
    for h in hs:
        h.remove()
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(legacy)
    log.append(str(e.value))
    bad = M.nn.Linear(1, 1)
    bad.register_load_state_dict_post_hook(lambda m, keys: 1)
    with pytest.raises(AssertionError):
        bad.load_state_dict(bad.state_dict())
    # the private pre-hook is called without the module unless with_module=True
    priv = M.nn.Linear(1, 1)
    priv._register_load_state_dict_pre_hook(lambda *a: log.append(("priv", len(a), a[1])))
    priv._register_load_state_dict_pre_hook(lambda *a: log.append(("privm", len(a), a[2])),
                                            with_module=True)
    priv.load_state_dict(priv.state_dict())
    return log


def test_load_state_dict_hooks_order_arguments_and_removal():
    log = _both(_load_hooks)
    assert log[-2] == ("priv", 7, "")


def _shared_and_prefix(M):
    lin = M.nn.Linear(2, 2)
    net = M.nn.Sequential(lin, lin)
    sd = net.state_dict()
    out = [list(sd), list(sd._metadata.items()), list(lin.state_dict(prefix="a"))]
    out.append(repr(net.load_state_dict(sd)))
    scalar = M.nn.Module()
    scalar.register_buffer("s", M.tensor(0.0))
    out.append(repr(scalar.load_state_dict({"s": M.tensor([5.0])})))   # 0.3-era 1-element
    out.append(scalar.s.tolist())
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict({"0.weight": M.zeros(3, 2), "0.bias": [1.0, 2.0]}, strict=False)
    out.append(str(e.value))
    return out


def test_shared_module_prefix_and_error_messages():
    _both(_shared_and_prefix)


def test_batch_norm_dict_without_version_still_loads():
    """The layout upgrade (num_batches_tracked added in version 2) runs inside
    _load_from_state_dict, so a dict without _metadata still loads strictly."""
    def run(M):
        bn = M.nn.BatchNorm1d(2)
        sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
        return repr(M.nn.Sequential(M.nn.BatchNorm1d(2)).load_state_dict(
            {"0." + k: v for k, v in sd.items()}))
    _both(run)


# -- torch.embedding_bag (the low-level form: weight first, mode 0/1/2, four results) ----------

_BAG_CASES = [([0, 1, 2, 3, 5, 4], [0, 2, 2, 5], False), ([1, 1, 4], [0], False),
              ([2, 0, 5, 5, 3], [0, 1, 1, 5], True), ([2, 0, 5, 5, 3], [0, 1, 1, 3], False)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 3, -1])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_torch_embedding_bag_matches_torch(dtype, mode, padding_idx, requires_grad):
    import numpy as np
    w = np.random.default_rng(0).standard_normal((6, 3)).astype(dtype)
    for idx, offsets, last in _BAG_CASES:
        for idt in ("int64", "int32"):
            def run(M):
                weight = M.tensor(w, requires_grad=requires_grad)
                res = M.embedding_bag(weight, M.tensor(idx, dtype=getattr(M, idt)),
                                      M.tensor(offsets, dtype=getattr(M, idt)), False, mode,
                                      False, None, last, padding_idx)
                out = [res[0].detach().numpy()] + [(r.tolist(), str(r.dtype)[-5:])
                                                   for r in res[1:]]
                if requires_grad:
                    (res[0] * M.arange(3, dtype=weight.dtype)).sum().backward()
                    out.append(weight.grad.numpy())
                return out
            got, want = run(tg), run(torch)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
            assert got[1:4] == want[1:4]
            if requires_grad:
                np.testing.assert_allclose(got[4], want[4], rtol=1e-6, atol=1e-6)


def test_torch_embedding_bag_gradcheck_and_errors():
    import numpy as np
    w = tg.tensor(np.random.default_rng(1).standard_normal((5, 2)), requires_grad=True)
    idx, offsets = tg.tensor([0, 4, 4, 1]), tg.tensor([0, 1, 3])
    for mode in (0, 1, 2):
        assert tg.autograd.gradcheck(lambda t: tg.embedding_bag(t, idx, offsets, False, mode)[0],
                                     (w,))
    for M in (tg, torch):
        weight = M.zeros(5, 2)
        with pytest.raises(TypeError, match="offsets"):
            M.embedding_bag(weight, M.tensor([0, 1]), None)
        with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max"):
            M.embedding_bag(weight, M.tensor([0, 1]), M.tensor([0]), False, 5)
        with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater"):
            M.embedding_bag(weight, M.tensor([0, 1]), M.tensor([0, 3]))
