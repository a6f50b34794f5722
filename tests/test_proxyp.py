"""Warnings that PyTorch raises from C++ name the user's line (not `sys:1` or a caller's line),
and its TORCH_WARN_ONCE ones appear once per process however many lines trigger them."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""\
    import torch
    x = torch.zeros(2, 3, 4)
    y = x.T
    y = x.T
    y = torch.tensor(0.).T
    y = torch.tensor(0.).T
    c = torch.tensor([1, 0], dtype=torch.uint8)
    y = torch.where(c, torch.ones(2), torch.zeros(2))
    y = torch.where(c, torch.ones(2), torch.zeros(2))
    e = torch.zeros(1).expand(3)
    with torch.no_grad():
        e[torch.tensor([0, 1])] = torch.tensor([1., 2.])
        e[torch.tensor([0, 1])] = torch.tensor([1., 2.])
    z = torch.tensor([1 + 1j]).to(torch.float32)
    z = torch.tensor([1 + 1j]).float()
    def f():
        return x.T
    for _ in range(2):
        f()
    m = torch.tensor([1, 0], dtype=torch.uint8)
    y = torch.ones(2)[m]
    y = torch.ones(2)[m]
    """)

# (line, message start): T, 0-D T, uint8 where and the complex cast once each; index_put_ on an
# expanded tensor and uint8 indexing at every call.
EXPECTED = [(3, "The use of `x.T`"), (5, "Tensor.T is deprecated on 0-D"),
            (8, "where received a uint8"), (12, "Use of index_put_ on expanded"),
            (13, "Use of index_put_ on expanded"), (14, "Casting complex values to real"),
            (21, "indexing with dtype torch.uint8"), (22, "indexing with dtype torch.uint8")]


def warning_lines(tmp_path, under_tapegrad):
    path = tmp_path / "warns.py"
    path.write_text(SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "tools", "corpus_hook"), REPO]) \
        if under_tapegrad else ""
    err = subprocess.run([sys.executable, str(path)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=True).stderr
    found = []
    for line in err.splitlines():
        if "UserWarning: " in line:
            where, _, message = line.partition(": UserWarning: ")
            found.append((where, message))
    return found


def test_cxx_warnings_name_the_user_line_and_warn_once(tmp_path):
    found = warning_lines(tmp_path, under_tapegrad=True)
    script = str(tmp_path / "warns.py")
    assert [where for where, _ in found] == [f"{script}:{line}" for line, _ in EXPECTED]
    for (_, message), (_, start) in zip(found, EXPECTED):
        assert message.startswith(start)


def test_expected_lines_are_pytorchs(tmp_path):
    pytest.importorskip("torch")
    found = warning_lines(tmp_path, under_tapegrad=False)
    script = str(tmp_path / "warns.py")
    assert [where for where, _ in found] == [f"{script}:{line}" for line, _ in EXPECTED]
