"""`print(type(t))` shows PyTorch's class names (`<class 'torch.Tensor'>`), as tutorials print
them, while pickle keeps finding tapegrad's classes under their real module (issue 15)."""
from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import tapegrad as tg
import tapegrad.nn as nn


def test_tensor_and_parameter_classes_print_torch_names():
    assert repr(type(tg.ones(2))) == "<class 'torch.Tensor'>"
    assert str(tg.Tensor) == "<class 'torch.Tensor'>"
    assert repr(type(nn.Parameter(tg.ones(2)))) == "<class 'torch.nn.parameter.Parameter'>"


def test_names_match_torch(torch):
    assert repr(type(tg.zeros(3))) == repr(type(torch.zeros(3)))
    assert repr(type(nn.Parameter(tg.zeros(3)))) == repr(type(torch.nn.Parameter(torch.zeros(3))))


def test_a_user_subclass_keeps_its_own_module():
    class Tagged(tg.Tensor):
        pass
    assert repr(Tagged) == f"<class '{__name__}.test_a_user_subclass_keeps_its_own_module.<locals>.Tagged'>"


def test_real_module_is_kept_for_pickle():
    assert tg.Tensor.__module__ == "tapegrad"
    p = nn.Parameter(tg.arange(3.0))
    for obj in (p, tg.arange(3.0, requires_grad=True), {"w": p}):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj)
    assert type(copy.deepcopy(p)) is nn.Parameter
    assert pickle.loads(pickle.dumps(tg.Tensor)) is tg.Tensor


def test_unpickling_never_imports_pytorch():
    # A checkpoint written and read by tapegrad alone must not pull PyTorch in by the class name.
    code = ("import pickle, sys, tapegrad as tg, tapegrad.nn as nn\n"
            "blob = pickle.dumps([nn.Parameter(tg.ones(2)), tg.ones(2)])\n"
            "pickle.loads(blob)\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_grad_fn_classes_print_as_torch(torch):
    def classes(T, device="cpu"):
        x = T.ones(2, 3, requires_grad=True, device=device)
        y = (x * 2).sum()
        fns = [y.grad_fn] + ([y.grad_fn.next_functions[0][0]] if device == "cpu" else [])
        return [(repr(type(f)), type(f).__module__, type(f).__qualname__) for f in fns]
    assert classes(tg) == classes(torch)
    assert classes(tg, "meta") == classes(torch, "meta")
    assert classes(tg)[0][0] == "<class 'SumBackward0'>"


def _value_classes(T):
    return [T.ones(2).shape, T.Size([2, 3]), T.device("cpu"), T.finfo(), T.iinfo(T.int8),
            T.strided, T.contiguous_format]


def test_value_classes_print_torch_names(torch):
    # `print(type(x.size()))` is a line of many first tutorials: torch prints <class 'torch.Size'>.
    assert [repr(type(v)) for v in _value_classes(tg)] == \
        [repr(type(v)) for v in _value_classes(torch)]
    assert repr(tg.Size) == "<class 'torch.Size'>"


def test_value_classes_pickle_as_themselves():
    for v in (tg.Size([2, 3]), tg.device("cpu")):
        back = pickle.loads(pickle.dumps(v))
        assert type(back) is type(v) and back == v
    assert pickle.loads(pickle.dumps(tg.Size)) is tg.Size


def test_module_subclass_keeps_a_users_metaclass():
    # nn.Module keeps the plain `type` metaclass, so mixing in ABC works as under PyTorch.
    import abc

    class Net(nn.Module, abc.ABC):
        @abc.abstractmethod
        def forward(self, x): ...
    assert type(Net) is abc.ABCMeta


def test_checkpoints_naming_sizes_old_module_still_load(tmp_path, monkeypatch):
    # Before Size took the package's name, files pickled it as tapegrad.tensor.Size.
    monkeypatch.setattr(tg.Size, "__module__", "tapegrad.tensor")
    path = tmp_path / "old.pt"
    with open(path, "wb") as fh:        # (tapegrad's own format of then)
        tg.serialization._save_tapegrad_format({"shape": tg.Size([2, 3])}, fh)
    assert b"tapegrad.tensor" in path.read_bytes()
    monkeypatch.undo()
    assert tg.load(path, weights_only=True) == {"shape": tg.Size([2, 3])}
