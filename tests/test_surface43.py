"""surface43: aliases that answer to their own names, foreach ops' tensor scalars, norm/movedim
argument forms PyTorch refuses, and the messages of calls missing arguments; each against
PyTorch."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

# The public names that are another name's function in tapegrad (found by the function behind
# each entry, so that a new alias is checked the day it is added).
_NAMESPACES = (("", "tapegrad", "torch"), ("linalg", "tapegrad.linalg", "torch.linalg"),
               ("special", "tapegrad.special", "torch.special"), ("fft", "tapegrad.fft",
                                                                  "torch.fft"))


def _module(path: str):
    import importlib
    return importlib.import_module(path)


def _aliases():
    """(namespace, name) of every public entry whose function is also exported under another
    name, plus every entry of the prefixed namespaces (linalg.det's name is "linalg_det")."""
    found = []
    for label, ours_path, theirs_path in _NAMESPACES:
        ours, theirs = _module(ours_path), _module(theirs_path)
        by_function: dict = {}
        for name in dir(ours):
            entry = getattr(ours, name, None)
            if isinstance(entry, tg._core.WithOut) and hasattr(theirs, name):
                by_function.setdefault(id(entry.__wrapped__), []).append(name)
        for names in by_function.values():
            if len(names) > 1 or label:
                found += [(label, ours_path, theirs_path, n) for n in names]
    return found


_ALIASES = _aliases()


def test_alias_discovery_finds_the_known_aliases():
    names = {(label, n) for label, _, _, n in _ALIASES}
    for expected in [("", "arccosh"), ("", "clip"), ("", "greater"), ("", "concat"),
                     ("", "moveaxis"), ("", "absolute"), ("", "ger"), ("special", "expit"),
                     ("special", "psi"), ("linalg", "det")]:
        assert expected in names


@pytest.mark.parametrize("label,ours_path,theirs_path,name", _ALIASES,
                         ids=[f"{a[0]}.{a[3]}" for a in _ALIASES])
def test_every_alias_answers_to_its_own_name(label, ours_path, theirs_path, name):
    ours = getattr(_module(ours_path), name)
    theirs = getattr(_module(theirs_path), name)
    assert ours.__name__ == theirs.__name__
    # (the qualified name is the one it is exported under: it pickles by it)
    assert ours.__qualname__ == name and repr(ours) == f"<function {name}>"
    assert pickle.loads(pickle.dumps(ours)) is ours


@pytest.mark.parametrize("name", ["arccosh", "arccos", "arcsin", "arcsinh", "arctan",
                                  "arctanh", "arctan2", "absolute", "clip", "fix", "greater",
                                  "greater_equal", "less", "less_equal", "not_equal",
                                  "moveaxis", "ger", "resize", "apply_", "sum_to_size", "new",
                                  "nonzero", "bernoulli"])
def test_tensor_methods_answer_to_their_own_names(name):
    assert getattr(tg.Tensor, name).__name__ == getattr(torch.Tensor, name).__name__ == name
    assert pickle.loads(pickle.dumps(getattr(tg.Tensor, name))) is getattr(tg.Tensor, name)


def test_aliases_are_apart_but_compute_the_same():
    assert tg.arccosh is not tg.acosh and tg.arccosh.__wrapped__ is tg.acosh.__wrapped__
    x = tg.tensor([1.5, 2.0], dtype=tg.float64, requires_grad=True)
    tg.arccosh(x).sum().backward()
    t = torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True)
    torch.arccosh(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    # one name shared by two namespaces stays one object (F.conv2d's layers hold it)
    assert tg.nn.functional.relu.__name__ == "relu"


@pytest.mark.parametrize("call", [
    lambda m: m.arccosh("a"), lambda m: m.special.expit("a"), lambda m: m.special.psi("a"),
    lambda m: m.linalg.det("a"), lambda m: m.concat("a"), lambda m: m.special.gammaln(1),
    lambda m: m.ger(m.ones(2), "a")])
def test_alias_messages_name_the_alias_called(call):
    with pytest.raises(TypeError) as ours:
        call(tg)
    with pytest.raises(TypeError) as theirs:
        call(torch)
    assert str(ours.value) == str(theirs.value)


def test_subclasses_dispatch_aliases_to_their_op():
    # (tapegrad's bfloat16 and nested tensors dispatch on the op behind the alias)
    for lib in (tg, torch):
        x = lib.tensor([1.5, 2.5, 3.0], dtype=lib.bfloat16)
        assert lib.clip(x, 0, 2).dtype == lib.bfloat16
    ours = tg.clip(tg.tensor([1.5, 2.5], dtype=tg.bfloat16), 0, 2)
    theirs = torch.clip(torch.tensor([1.5, 2.5], dtype=torch.bfloat16), 0, 2)
    assert ours.tolist() == theirs.tolist()
    ours = tg.nested.nested_tensor([tg.tensor([1.5, 2.0]), tg.tensor([3.0])], layout=tg.jagged)
    theirs = torch.nested.nested_tensor([torch.tensor([1.5, 2.0]), torch.tensor([3.0])],
                                        layout=torch.jagged)
    for a, b in zip((-ours).absolute().unbind(), (-theirs).absolute().unbind()):
        np.testing.assert_allclose(a.numpy(), b.numpy())
    for a, b in zip(ours.greater(1.8).unbind(), theirs.greater(1.8).unbind()):
        assert a.tolist() == b.tolist()


def _raises_like(call):
    """call(torch)'s exception type and message equal call(tg)'s (first line)."""
    try:
        want = call(torch)
    except Exception as e:          # noqa: BLE001 - PyTorch's outcome is the specification
        with pytest.raises(type(e)) as got:
            call(tg)
        ours, theirs = str(got.value).split("\n")[0], str(e).split("\n")[0]
        # (an invalid combination's listing of the signatures may be left out)
        assert ours == theirs or ("invalid combination" in ours and
                                  ours.split(", but")[0] == theirs.split(", but")[0])
        return
    got = call(tg)
    if isinstance(want, (tuple, list)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy())
    else:
        np.testing.assert_allclose(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", ["_foreach_add", "_foreach_mul", "_foreach_div", "_foreach_sub",
                                "_foreach_pow", "_foreach_maximum", "_foreach_clamp_min"])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("scalar", [[2.0], [1.0, 2.0, 3.0], 2.0])
def test_foreach_tensor_scalar_must_be_zero_dim(op, inplace, scalar):
    def call(m):
        xs = [m.ones(3), m.arange(3.0)]
        return getattr(m, op + "_" * inplace)(xs, m.tensor(scalar))
    _raises_like(call)


@pytest.mark.parametrize("op", ["_foreach_addcmul", "_foreach_addcdiv_"])
@pytest.mark.parametrize("scalars", [0.5, [0.5], [0.5, 0.25], [[0.5, 0.25]]])
def test_foreach_packed_scalars_must_be_one_dim(op, scalars):
    def call(m):
        xs = [m.ones(3), m.arange(3.0)]
        return getattr(m, op)([x.clone() for x in xs], xs, [x + 1 for x in xs], m.tensor(scalars))
    _raises_like(call)


@pytest.mark.parametrize("call", [
    lambda m, x: x.norm(dim=m.tensor(1)),
    lambda m, x: m.norm(x, dim=m.tensor(1)),
    lambda m, x: x.norm(2, m.tensor(1)),
    lambda m, x: x.norm(dim=m.tensor([1])),
    lambda m, x: x.norm(dim=1, keepdim=True),
])
def test_norm_with_tensor_dims(call):
    _raises_like(lambda m: call(m, m.arange(6.0).reshape(2, 3)))


@pytest.mark.parametrize("call", [
    lambda m, x: m.movedim(x, True, 0), lambda m, x: m.movedim(x, 0, False),
    lambda m, x: m.moveaxis(x, True, 0), lambda m, x: x.movedim(True, 0),
    lambda m, x: m.movedim(x, m.tensor([0]), m.tensor([1])),
    lambda m, x: m.movedim(x, m.tensor([0, 1]), (1, 0)), lambda m, x: x.movedim(m.tensor([0]), 1),
    lambda m, x: m.movedim(x, m.tensor(0), m.tensor(1)), lambda m, x: m.movedim(x, [True], [0]),
    lambda m, x: x.moveaxis(-1, 0),
])
def test_movedim_argument_forms(call):
    _raises_like(lambda m: call(m, m.arange(6.0).reshape(2, 3)))


@pytest.mark.parametrize("call", [
    lambda m, x: x.split(), lambda m, x: m.split(x), lambda m, x: x.split(split_size=1),
    lambda m, x: m.split(x, split_size_or_sections=1), lambda m, x: x.unflatten(),
    lambda m, x: m.repeat_interleave(), lambda m, x: x.repeat_interleave(),
    lambda m, x: x.long().repeat_interleave(), lambda m, x: m.repeat_interleave(x.long()[0]),
    lambda m, x: m.gather(x), lambda m, x: m.gather(x, 0), lambda m, x: x.gather(),
    lambda m, x: x.gather(0), lambda m, x: x.gather(index=m.zeros(2, 3, dtype=m.long)),
    lambda m, x: x.clone().copy_(other=x + 1), lambda m, x: x.clone().copy_(),
    lambda m, x: x.clone().copy_(x + 1, True),
])
def test_calls_missing_or_misnaming_arguments(call):
    _raises_like(lambda m: call(m, m.arange(6.0).reshape(2, 3)))


def test_copy_takes_its_source_as_other():
    # (PyTorch 2.13 names copy_'s source `other`: src= is refused)
    for lib in (tg, torch):
        x = lib.zeros(2)
        assert x.copy_(other=lib.ones(2)).tolist() == [1.0, 1.0]
        with pytest.raises(TypeError, match="copy_()"):
            x.copy_(src=lib.ones(2))


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(keepdim=True), lambda m, x: m.sum(x, keepdim=True),
    lambda m, x: x.mean(keepdims=True), lambda m, x: m.mean(x, keepdim=False),
    lambda m, x: x.sum(dtype=m.float64, keepdim=True), lambda m, x: x.sum(None, True),
    lambda m, x: x.sum(dim=None, keepdim=True), lambda m, x: x.sum(axis=0, keepdims=True),
    lambda m, x: x.mean(-1, True), lambda m, x: x.sum(keepdim=True, axis=1),
    lambda m, x: m.sum(x), lambda m, x: x.mean(dtype=m.float64),
])
def test_sum_and_mean_refuse_keepdim_without_dim(call):
    # (PyTorch's every-dims signature has no keepdim: it had been taken, silently)
    _raises_like(lambda m: call(m, m.arange(6.0).reshape(2, 3)))


def test_sum_and_mean_every_dim_gradients_stand(gradcheck):
    gradcheck(lambda x: x.sum(None, True) * x.mean(dim=None), np.arange(6.0).reshape(2, 3))
