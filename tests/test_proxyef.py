"""Scripts that teach by showing errors and warnings print PyTorch's messages whole.

PyTorch's C++ warnings (TORCH_WARN / TORCH_WARN_ONCE) end with "(Triggered internally at
<its source file>:<line>.)", and a script that prints str(w.message) from
warnings.catch_warnings(record=True) prints that suffix: the messages below are compared whole,
each library in a fresh process (several are once per process).
"""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import tapegrad as tg

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each case triggers one of PyTorch's warnings (C++-raised unless noted) in its usual form.
SCRIPT = textwrap.dedent("""
    import json, warnings
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    u8 = torch.tensor([1, 0], dtype=torch.uint8)
    cases = [
        ("meshgrid", lambda: torch.meshgrid(torch.arange(3), torch.arange(2))),
        ("T of 3-d", lambda: torch.ones(2, 3, 4).T),
        ("T of 0-d", lambda: torch.tensor(1.).T),
        ("mT of 0-d", lambda: torch.tensor(1.).mT),
        ("H of 0-d", lambda: torch.tensor(1.).H),
        ("std dof", lambda: torch.tensor([1.0]).std()),
        ("var dof", lambda: torch.ones(3, 1).var(dim=1)),
        ("cov dof", lambda: torch.cov(torch.ones(1, 1))),
        ("out resized", lambda: torch.add(torch.ones(3), 1, out=torch.empty(2))),
        ("arange out resized", lambda: torch.arange(0, 5, out=torch.empty(2))),
        ("complex cast", lambda: torch.tensor([1 + 2j]).float()),
        ("same padding", lambda: nn.Conv1d(1, 1, 4, padding="same")(torch.randn(1, 1, 8))),
        ("non-writable", lambda: torch.from_numpy(np.broadcast_to(np.ones(1), (2,)))),
        ("list of arrays", lambda: torch.tensor([np.ones(2), np.ones(2)])),
        ("copy construct (Python)", lambda: torch.tensor(torch.ones(1))),
        ("scalar of grad", lambda: float(torch.ones(1, requires_grad=True) * 2)),
        ("uint8 index", lambda: torch.ones(2, 2)[:, u8]),
        ("uint8 where", lambda: torch.where(u8, torch.ones(2), torch.zeros(2))),
        ("non-tuple index", lambda: torch.ones(3, 3)[[0, slice(None)]]),
        ("expanded index_put_", lambda: torch.ones(1).expand(3).__setitem__(torch.tensor([0]),
                                                                             torch.ones(1))),
        ("scatter reduce", lambda: torch.zeros(3).scatter(0, torch.tensor([0]), torch.ones(1),
                                                          reduce="add")),
        ("deprecated overload", lambda: torch.ones(2).add_(2, torch.ones(2))),
        ("cross without dim", lambda: torch.cross(torch.randn(3, 3), torch.randn(3, 3))),
        ("torch.qr", lambda: torch.qr(torch.eye(2))),
        ("torch.lu", lambda: torch.lu(torch.eye(2))),
        ("torch.cholesky", lambda: torch.cholesky(torch.eye(2))),
        ("chain_matmul", lambda: torch.chain_matmul(torch.eye(2), torch.eye(2))),
        ("stft window before return_complex", lambda: torch.stft(torch.randn(64), 16)),
        ("mse size (Python)", lambda: F.mse_loss(torch.ones(2, 1), torch.ones(2))),
        ("softmax dim (Python)", lambda: F.softmax(torch.randn(2, 3))),
    ]
    def nonleaf_grad():
        y = torch.ones(2, requires_grad=True) * 2
        return y.grad
    cases.append(("non-leaf .grad", nonleaf_grad))
    def anomaly():
        with torch.autograd.detect_anomaly():
            x = torch.randn(3, requires_grad=True)
            y = x.exp()
            y.add_(1)
            y.sum().backward()
    cases.append(("anomaly", anomaly))
    found = []
    for name, fn in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fn()
                outcome = None
            except Exception as e:
                outcome = type(e).__name__
        # (the anomaly warning's forward trace names this script's lines: its first line only)
        found.append([name, outcome, [[w.category.__name__, str(w.message) if name != "anomaly"
                                       else str(w.message).splitlines()[0] + " ... " +
                                       str(w.message).splitlines()[-1]] for w in caught]])
    print(json.dumps(found))
""")


def _messages(tmp_path, under_tapegrad):
    path = tmp_path / "warns.py"
    path.write_text(SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "tools", "corpus_hook"), REPO]) \
        if under_tapegrad else ""
    out = subprocess.run([sys.executable, str(path)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_cpp_warnings_end_with_torchs_triggered_internally_note(tmp_path):
    pytest.importorskip("torch")
    theirs = _messages(tmp_path, False)
    ours = _messages(tmp_path, True)
    assert [c[0] for c in ours] == [c[0] for c in theirs]
    for mine, expected in zip(ours, theirs):
        assert mine == expected
    # (the comparison means something: most carry the note, the Python-raised ones do not)
    noted = [c[0] for c in theirs if any("(Triggered internally at " in m for _, m in c[2])]
    assert len(noted) >= 25
    assert "copy construct (Python)" not in noted and "mse size (Python)" not in noted


def test_nonleaf_grad_warning_text_in_process(torch):
    def read(lib):
        y = lib.ones(2, requires_grad=True) * 2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert y.grad is None
        return [str(w.message) for w in caught]
    assert read(tg) == read(torch)
    assert read(tg)[0].endswith("(Triggered internally at /__w/pytorch/pytorch/build/aten/src/"
                                "ATen/core/TensorBody.h:493.)")


def test_out_resize_warning_per_call_with_note(torch):
    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = lib.mm(lib.ones(2, 2), lib.ones(2, 2), out=lib.empty(3))
        return r.tolist(), [str(w.message) for w in caught]
    assert run(tg) == run(torch)


TYPE_MESSAGE_CASES = {
    "Size item assignment": lambda T: T.ones(2, 3).shape.__setitem__(0, 4),
    "Size called": lambda T: T.ones(2, 3).shape(0),
    "Size minus int": lambda T: T.ones(2, 3).shape - 1,
    "Size attribute": lambda T: T.ones(2, 3).shape.foo,
    "dtype attribute": lambda T: T.float32.foo,
    "dtype called": lambda T: T.float32(1),
    "dtype ordered": lambda T: T.float32 < T.float64,
    "device attribute": lambda T: T.device("cpu").foo,
    "Generator attribute": lambda T: T.Generator().foo,
}


@pytest.mark.parametrize("case", sorted(TYPE_MESSAGE_CASES))
def test_python_messages_name_torchs_types(case, torch):
    # CPython's own messages name the type by its C name: PyTorch's C types print with their
    # module ("'torch.Size' object does not support item assignment")
    def message(lib):
        with pytest.raises((TypeError, AttributeError)) as info:
            TYPE_MESSAGE_CASES[case](lib)
        return type(info.value), str(info.value)
    assert message(tg) == message(torch)


def test_named_types_keep_their_python_names_and_pickle():
    import copy
    import pickle
    for obj in (tg.float32, tg.Size([2, 3]), tg.device("cpu")):
        assert pickle.loads(pickle.dumps(obj)) == obj and copy.deepcopy(obj) == obj
    assert (tg.Size.__name__, type(tg.float32).__name__, tg.device.__name__) == \
        ("Size", "dtype", "device")

    class Shape(tg.Size):       # a subclass is named by its own name, as in PyTorch
        pass
    with pytest.raises(TypeError, match="^'Shape' object does not support item assignment$"):
        Shape([1])[0] = 2


SIZE_ITEMS = {
    "floats": [1.5], "str": "ab", "nested": [[1]], "None item": [None], "float tensor": None,
    "two-element tensor": None, "numpy float": None, "numpy bool": None,
    "ints": [2, 3], "bool": [True], "numpy ints": None, "int tensor": None, "generator": None,
}


@pytest.mark.parametrize("case", sorted(SIZE_ITEMS))
def test_size_takes_ints_only_as_torch(case, torch):
    import numpy as np

    def items(lib):
        given = SIZE_ITEMS[case]
        return given if given is not None else {
            "float tensor": [lib.tensor(2.0)], "two-element tensor": [lib.tensor([1, 2])],
            "numpy float": [np.float64(2)], "numpy bool": [np.bool_(True)],
            "numpy ints": [np.int64(2), np.uint8(3)], "int tensor": [lib.tensor(2), 4],
            "generator": (n for n in (1, 2))}[case]

    def build(lib):
        try:
            s = lib.Size(items(lib))
        except (TypeError, ValueError) as e:
            return type(e), str(e)
        return repr(s), [type(n).__name__ for n in s]
    assert build(tg) == build(torch)


def test_size_concatenation_checks_items_and_shape_stays_fast_path(torch):
    def plus(lib):
        try:
            return repr(lib.Size([2]) + (1.5,))
        except TypeError as e:
            return str(e)
    assert plus(tg) == plus(torch)
    assert type(tg.ones(2, 3).shape) is tg.Size and tg.ones(2, 3).shape == (2, 3)


@pytest.mark.parametrize("call", ["linspace(0, 1)", "logspace(0, 1)", "pow(lib.ones(2))",
                                  "ones(2).pow()", "linspace(0, 1, 'a')"])
def test_overloaded_factories_list_torchs_signatures(call, torch):
    def message(lib):
        target = lib if not call.startswith("ones(") else lib
        with pytest.raises(TypeError) as info:
            eval(call.replace("lib.", "L."), {"L": lib}, dict(vars(target)))
        return str(info.value)
    assert message(tg) == message(torch)
