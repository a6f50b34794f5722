"""nn.Module mechanics: registration, traversal, state dicts, modes, dtype casts, repr, init."""
import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(tg.ones(2, 3))
        self.register_buffer("steps", tg.tensor(0))
        self.register_buffer("scratch", tg.zeros(1), persistent=False)
        self.inner = nn.Module()
        self.inner.v = nn.Parameter(tg.zeros(3))
        self.plain = 5


def test_registration_and_traversal():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["w", "inner.v"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "inner"]
    assert list(net.children()) == [net.inner]
    assert net.plain == 5 and "plain" not in net._parameters
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        net.missing
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'w'"):
        net.w = 3
    net.w = None
    assert [n for n, _ in net.named_parameters()] == ["inner.v"]


def test_shared_parameters_are_listed_once():
    shared = nn.Parameter(tg.ones(1))
    a, b = nn.Module(), nn.Module()
    a.p = shared
    b.p = shared
    root = nn.Sequential(a, b)
    assert len(list(root.parameters())) == 1


def test_state_dict_round_trip_and_strictness():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["w", "steps", "inner.v"]          # non-persistent buffers left out
    assert not sd["w"].requires_grad
    other = Net()
    other.w._array[...] = 7
    assert repr(net.load_state_dict(other.state_dict())) == "<All keys matched successfully>"
    assert net.w._array.tolist() == [[7.0] * 3] * 2
    bad = dict(sd)
    del bad["w"]
    bad["extra"] = tg.ones(1)
    with pytest.raises(RuntimeError, match='(?s)Missing key\\(s\\) in state_dict: "w". '
                                           '.*Unexpected key\\(s\\) in state_dict: "extra"'):
        net.load_state_dict(bad)
    result = net.load_state_dict(bad, strict=False)
    assert result.missing_keys == ["w"] and result.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match="size mismatch for w: copying a param with shape "
                                           "torch.Size\\(\\[3\\]\\) from checkpoint"):
        net.load_state_dict({**sd, "w": tg.ones(3)})


def test_train_eval_zero_grad_and_casts():
    net = Net()
    net.eval()
    assert not net.training and not net.inner.training
    net.train()
    assert net.inner.training
    net.w.grad = tg.ones(2, 3)
    net.zero_grad(set_to_none=False)
    assert net.w.grad.tolist() == [[0.0] * 3] * 2
    net.zero_grad()
    assert net.w.grad is None
    net.double()
    assert net.w.dtype == tg.float64 and net.steps.dtype == tg.int64
    net.to(tg.float32)
    assert net.inner.v.dtype == tg.float32
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Module", "Net"]


def _module_lists(lib):
    nn_ = lib.nn
    block = lambda: nn_.Sequential(nn_.Linear(4, 4), nn_.GELU())
    return [nn_.ModuleList([nn_.Linear(2, 2), nn_.Linear(2, 2), nn_.ReLU(), nn_.Linear(2, 2)]),
            nn_.ModuleList(), nn_.ModuleList([nn_.ReLU()]),
            nn_.ModuleDict({"h": nn_.ModuleList([block() for _ in range(3)]), "ln": nn_.LayerNorm(4)}),
            nn_.Sequential(nn_.ReLU(), nn_.ReLU())]


def test_module_list_repr_collapses_runs_of_equal_children():
    stack, empty, single, nested, sequential = map(repr, _module_lists(tg))
    assert stack == ("ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
                     "  (2): ReLU()\n  (3): Linear(in_features=2, out_features=2, bias=True)\n)")
    assert empty == "ModuleList()" and single == "ModuleList(\n  (0): ReLU()\n)"
    assert "(h): ModuleList(\n    (0-2): 3 x Sequential(\n      (0): Linear" in nested
    assert sequential == "Sequential(\n  (0): ReLU()\n  (1): ReLU()\n)"   # only lists collapse


def test_module_list_repr_matches_torch(torch):
    assert [repr(m) for m in _module_lists(tg)] == [repr(m) for m in _module_lists(torch)]


def _apply_order(lib):
    shared = lib.nn.Linear(2, 2)
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Sequential(lib.nn.ReLU(), shared),
                            lib.nn.Linear(8, 1), shared)
    seen = []
    net.apply(lambda m: seen.append((type(m).__name__, tuple(getattr(m, "weight", lib.ones(0)).shape))))
    return seen


def test_apply_visits_children_in_order_before_their_parent():
    # Post-order, siblings first to last: an init that prints (d2l's) lists layers in order.
    # A module under two parents is visited under each.
    assert _apply_order(tg) == [("Linear", (8, 4)), ("ReLU", (0,)), ("Linear", (2, 2)),
                                ("Sequential", (0,)), ("Linear", (1, 8)), ("Linear", (2, 2)),
                                ("Sequential", (0,))]


def test_apply_order_matches_torch(torch):
    assert _apply_order(tg) == _apply_order(torch)


def test_parameter_repr_and_sharing():
    t = tg.ones(2)
    p = nn.Parameter(t)
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert np.shares_memory(p.detach().numpy(), t.numpy())
    assert p.is_leaf and p.requires_grad
    assert not nn.Parameter(tg.ones(1), requires_grad=False).requires_grad


def test_init_functions_follow_pytorch_bounds():
    tg.manual_seed(0)
    w = tg.empty(64, 32)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = 1 / math.sqrt(32)
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.9 * bound
    nn.init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 96)
    nn.init.constant_(w, 0.5)
    assert (w.numpy() == 0.5).all()
    nn.init.zeros_(w)
    nn.init.ones_(w)
    assert (w.numpy() == 1).all()
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        nn.init.xavier_uniform_(tg.empty(3))


def test_clip_grad_norm_and_value():
    a, b = nn.Parameter(tg.zeros(2)), nn.Parameter(tg.zeros(1))
    a.grad = tg.tensor([3.0, 0.0])
    b.grad = tg.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert abs(total.item() - 5.0) < 1e-6
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.0], rtol=1e-5)
    nn.utils.clip_grad_value_([a, b], 0.1)
    np.testing.assert_allclose(b.grad.numpy(), [0.1])


def test_module_repr_matches_pytorch_layout():
    m = nn.Sequential(nn.Identity(), nn.ModuleList([nn.Tanh()]))
    assert repr(m) == ("Sequential(\n  (0): Identity()\n  (1): ModuleList(\n    (0): Tanh()\n"
                       "  )\n)")


# -- state_dict layout versions (_metadata) ----------------------------------------------------

def _bn_model(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))


def test_state_dict_records_layout_versions():
    sd = _bn_model(tg).state_dict()
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 2}}
    assert not hasattr(_bn_model(tg).state_dict(destination={}), "_metadata")


def test_batchnorm_loads_an_unversioned_dict_without_num_batches_tracked():
    model = _bn_model(tg)
    model[1].num_batches_tracked.fill_(7)
    plain = {k: v for k, v in model.state_dict().items() if k != "1.num_batches_tracked"}
    result = model.load_state_dict(plain)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert model[1].num_batches_tracked.item() == 7      # kept, not reset
    assert "1.num_batches_tracked" not in plain          # the caller's dict is untouched
    # A current (version 2) dict that lost the key is still reported.
    current = model.state_dict()
    del current["1.num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "1.num_batches_tracked"'):
        model.load_state_dict(current)
    assert model.load_state_dict(current, strict=False).missing_keys == ["1.num_batches_tracked"]
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        model.load_state_dict([("0.weight", tg.zeros(3, 2))])


def test_old_batchnorm_dicts_match_torch(torch):
    def observe(lib):
        model = _bn_model(lib)
        sd = model.state_dict()
        out = [dict(sd._metadata)]
        plain = {k: v for k, v in sd.items() if k != "1.num_batches_tracked"}
        res = model.load_state_dict(plain, strict=False)
        out.append((res.missing_keys, res.unexpected_keys, int(model[1].num_batches_tracked)))
        sd._metadata["1"] = {"version": 1}
        del sd["1.num_batches_tracked"]
        out.append(model.load_state_dict(sd, strict=False).missing_keys)
        off = lib.nn.BatchNorm1d(3, track_running_stats=False)
        out.append(off.load_state_dict({"weight": lib.ones(3), "bias": lib.zeros(3)}).missing_keys)
        return out
    assert observe(tg) == observe(torch)


def test_state_dict_metadata_survives_save_and_weights_only_load(tmp_path):
    sd = _bn_model(tg).state_dict()
    tg.save(sd, tmp_path / "sd.pt")
    for weights_only in (True, False):
        back = tg.load(tmp_path / "sd.pt", weights_only=weights_only)
        assert back._metadata == sd._metadata and list(back) == list(sd)


def test_registries_are_plain_dicts_printed_as_torch_prints_them(torch):
    # pytorch-book prints `net._modules` / `net._parameters` / `bn._buffers`: PyTorch 2 keeps
    # them in plain dicts (its hook tables and state_dict stay OrderedDicts).
    def build(lib):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(2, 3))
        net.register_parameter("scale", lib.nn.Parameter(lib.ones(2)))
        bn = lib.nn.BatchNorm1d(2)
        return net, bn
    (tnet, tbn), (gnet, gbn) = build(torch), build(tg)
    for attr in ("_modules", "_parameters"):
        assert type(getattr(gnet, attr)) is type(getattr(tnet, attr)) is dict
    assert type(gbn._buffers) is type(tbn._buffers) is dict
    assert type(gnet._forward_hooks).__name__ == type(tnet._forward_hooks).__name__ == "OrderedDict"
    assert type(gnet.state_dict()).__name__ == type(tnet.state_dict()).__name__ == "OrderedDict"
    assert repr(gnet._modules) == repr(tnet._modules)
    assert repr(nn.Module()._modules) == repr(torch.nn.Module()._modules) == "{}"
    assert repr(gbn._buffers) == repr(tbn._buffers)


def _reset_and_repeat_scenario(L):
    """reset_parameters / reset_running_stats of the norm and lookup layers, Sequential's * and
    += and ModuleDict.pop/clear (values that do not depend on the random stream)."""
    L.manual_seed(0)
    out = []
    bn = L.nn.BatchNorm1d(3)
    bn(L.randn(4, 3))
    with L.no_grad():
        bn.weight.mul_(3)
        bn.bias.add_(1)
    bn.reset_parameters()
    out.append([bn.weight.tolist(), bn.bias.tolist(), bn.running_mean.tolist(),
                bn.running_var.tolist(), bn.num_batches_tracked.item()])
    inorm = L.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    inorm(L.randn(2, 3, 5))
    inorm.reset_running_stats()
    out.append([inorm.running_var.tolist(), inorm.num_batches_tracked.item()])
    ln = L.nn.LayerNorm(3)
    with L.no_grad():
        ln.weight.mul_(2)
    ln.reset_parameters()
    out.append(ln.weight.tolist())
    gn = L.nn.GroupNorm(1, 2)
    with L.no_grad():
        gn.bias.add_(2)
    gn.reset_parameters()
    out.append(gn.bias.tolist())
    for table in (L.nn.Embedding(4, 2, padding_idx=1), L.nn.EmbeddingBag(4, 2, padding_idx=1)):
        with L.no_grad():
            table.weight.fill_(5)
        table.reset_parameters()
        out.append((table.weight[1].tolist(), bool((table.weight[0] != 5).all())))
    s = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.ReLU())
    m = s * 2
    out.append((len(m), m[0] is m[2], list(m._modules), len(list(m.parameters()))))
    out.append(len(3 * s))
    s2 = L.nn.Sequential(L.nn.Linear(2, 2))
    s2 *= 3
    out.append((len(s2), s2[0] is s2[2]))
    s2 += L.nn.Sequential(L.nn.Tanh())
    out.append(str(s2))
    for bad in (lambda: s * 0, lambda: s * 1.5, lambda: s.__iadd__(3)):
        with pytest.raises((TypeError, ValueError)) as info:
            bad()
        out.append((info.type.__name__, str(info.value).replace("tapegrad", "torch")))
    d = L.nn.ModuleDict({"a": L.nn.ReLU(), "b": L.nn.Tanh()})
    out.append((type(d.pop("a")).__name__, list(d)))
    d.clear()
    out.append(len(d))
    return out


def test_reset_parameters_and_sequential_repeat_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _reset_and_repeat_scenario(tg) == _reset_and_repeat_scenario(torch)


def test_module_classes_list_pytorchs_public_methods():
    # a script's `if hasattr(m, "reset_parameters"): m.reset_parameters()` must reach the same
    # layers under tapegrad
    torch = pytest.importorskip("torch")
    for name in ("BatchNorm1d", "BatchNorm2d", "InstanceNorm2d", "LayerNorm", "GroupNorm",
                 "Embedding", "EmbeddingBag", "Sequential", "ModuleDict"):
        theirs = {n for n in dir(getattr(torch.nn, name)) if not n.startswith("_")}
        mine = {n for n in dir(getattr(tg.nn, name)) if not n.startswith("_")}
        assert theirs <= mine, (name, sorted(theirs - mine))


def test_embedding_subclass_reset_parameters_runs_at_construction():
    # PyTorch's Embedding.__init__ calls self.reset_parameters(): a subclass's override decides
    # the initial table
    class Zeros(tg.nn.Embedding):
        def reset_parameters(self):
            tg.nn.init.zeros_(self.weight)

    assert Zeros(3, 2).weight.abs().sum().item() == 0
