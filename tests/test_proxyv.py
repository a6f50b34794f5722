"""Faults found by running held-out PyTorch scripts (proxy round v) under tapegrad, each checked
against PyTorch itself: same outcome, same exception type and key phrase."""
from __future__ import annotations

from collections import OrderedDict

import pytest

import tapegrad as tg


def _outcome(fn):
    """('ok', None) or (exception type name, message) — comparable across the two libraries."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc).__name__, str(exc)
    return "ok", None


def _registrations(lib):
    """Every way a module is given a named parameter, buffer or submodule that PyTorch checks.

    WGAN's DCGAN generator (progradeep/gan-pytorch) names its layers
    'initial.{nz}-{cngf}.convt': PyTorch refuses the dotted name with KeyError at add_module,
    tapegrad used to register it and fail later with an unrelated error."""
    nn = lib.nn

    def fresh():
        return nn.Module()

    def param():
        return nn.Parameter(lib.ones(1))

    def taken(attr_setup, method, value):
        def run():
            m = fresh()
            attr_setup(m)
            getattr(m, method)("x", value())
        return run

    cases = {}
    for method, value in [("add_module", nn.ReLU), ("register_module", nn.ReLU),
                          ("register_parameter", param), ("register_buffer", lambda: lib.ones(1))]:
        for label, name in [("dotted", "a.b"), ("empty", ""), ("not a string", 3)]:
            cases[f"{method} {label}"] = (lambda method=method, name=name, value=value:
                                          getattr(fresh(), method)(name, value()))
        cases[f"{method} over plain attribute"] = taken(lambda m: setattr(m, "x", 1), method, value)
        cases[f"{method} over method"] = (lambda method=method, value=value:
                                          getattr(fresh(), method)("forward", value()))
    cases["buffer over parameter"] = taken(lambda m: setattr(m, "x", param()),
                                           "register_buffer", lambda: lib.ones(1))
    cases["parameter over buffer"] = taken(lambda m: m.register_buffer("x", lib.ones(1)),
                                           "register_parameter", param)
    cases["module over parameter"] = taken(lambda m: setattr(m, "x", param()), "add_module", nn.ReLU)
    cases["parameter over module"] = taken(lambda m: m.add_module("x", nn.ReLU()),
                                           "register_parameter", param)
    # Replacing an entry of the same kind is allowed.
    cases["module over module"] = taken(lambda m: m.add_module("x", nn.ReLU()), "add_module", nn.Tanh)
    cases["buffer over buffer"] = taken(lambda m: m.register_buffer("x", lib.ones(1)),
                                        "register_buffer", lambda: lib.zeros(1))
    # Attribute assignment: a Parameter goes through register_parameter, a module does not.
    cases["setattr dotted parameter"] = lambda: setattr(fresh(), "a.b", param())
    cases["setattr dotted module"] = lambda: setattr(fresh(), "a.b", nn.ReLU())
    cases["setattr parameter over plain attribute"] = taken(lambda m: setattr(m, "x", 1),
                                                            "__setattr__", param)
    # Containers register their items through the same methods.
    cases["Sequential dotted key"] = lambda: nn.Sequential(OrderedDict([("a.b", nn.ReLU())]))
    cases["ModuleDict dotted key"] = lambda: nn.ModuleDict({"a.b": nn.ReLU()})
    cases["ParameterDict dotted key"] = lambda: nn.ParameterDict({"a.b": param()})

    class Early(nn.Module):
        def __init__(self, method, value):
            getattr(self, method)("x", value)
            super().__init__()

    cases["buffer before __init__"] = lambda: Early("register_buffer", lib.ones(1))
    cases["parameter before __init__"] = lambda: Early("register_parameter", None)
    return cases


def test_registration_names_are_checked_as_in_pytorch(torch):
    ours, theirs = _registrations(tg), _registrations(torch)
    for label in theirs:
        expected, got = _outcome(theirs[label]), _outcome(ours[label])
        assert got == expected, label


def test_dotted_layer_name_fails_at_add_module():
    main = tg.nn.Sequential()
    with pytest.raises(KeyError, match=r"module name can.+t contain.+got: initial\.100-512\.convt"):
        main.add_module("initial.{0}-{1}.convt".format(100, 512), tg.nn.ConvTranspose2d(100, 512, 4))
    assert len(main) == 0


def test_optimizer_given_a_tensor_names_its_torch_type(torch):
    """`optim.SGD(model.weight, lr=...)` (a tensor where an iterable of them is expected): the
    message names the tensor's legacy type as PyTorch does (torch.typename), not the class."""
    for make in (lambda lib: lib.ones(2), lambda lib: lib.ones(2, dtype=lib.float64),
                 lambda lib: lib.nn.Parameter(lib.ones(2))):
        expected = _outcome(lambda: torch.optim.SGD(make(torch), lr=0.1))
        assert expected[0] == "TypeError"
        assert _outcome(lambda: tg.optim.SGD(make(tg), lr=0.1)) == expected


def test_iterable_dataset_without_iter_cannot_be_instantiated(torch):
    """IterableDataset's __iter__ is abstract in PyTorch: a subclass that forgets it (defining
    __getitem__ instead) fails at construction with TypeError, not later in the DataLoader."""
    def bad_subclass(lib):
        class Rows(lib.utils.data.IterableDataset):
            def __getitem__(self, i):
                return i
        return Rows

    for make in (lambda lib: lib.utils.data.IterableDataset(), lambda lib: bad_subclass(lib)()):
        expected = _outcome(lambda: make(torch))
        got = _outcome(lambda: make(tg))
        assert expected[0] == got[0] == "TypeError"
        assert "abstract method __iter__" in got[1]

    class Count(tg.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    assert [b.tolist() for b in tg.utils.data.DataLoader(Count(), batch_size=2)] == [[0, 1], [2]]
