"""Regressions found running course/book PyTorch code (Deep Learning with PyTorch, MIT 6.S191,
CS285, Zero to GANs, deeplearning.ai GANs) under tapegrad; each case is checked against torch."""
from __future__ import annotations

import os

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _save_error(mod, obj, path):
    try:
        mod.save(obj, path)
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("rel", ["...\\saved model GAN", "ckpts\\net.pt", "plainfile.txt/net.pt"])
def test_save_parent_directory_as_the_zip_writer_sees_it(tmp_path, monkeypatch, rel):
    # PyTorch's zip writer takes the parent up to the last '/', else the last backslash, on every
    # OS, and wants it to be a directory: a Windows-style path from a notebook fails on Linux.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plainfile.txt").write_text("x")
    want = _save_error(torch, torch.nn.Linear(2, 2).state_dict(), rel)
    got = _save_error(tg, tg.nn.Linear(2, 2).state_dict(), rel)
    assert want is not None and want[0] is RuntimeError
    assert got == want
    assert not os.path.exists(rel) or rel == "plainfile.txt/net.pt"


def test_save_backslash_name_with_existing_parent_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ck").mkdir()
    # 'ck' exists as a directory, so both libraries write a file whose name holds the backslash.
    torch.save({"w": torch.ones(2)}, "ck\\a.pt")
    tg.save({"w": tg.ones(2)}, "ck\\b.pt")
    assert os.path.isfile("ck\\a.pt") and os.path.isfile("ck\\b.pt")
    assert tg.load("ck\\b.pt")["w"].tolist() == [1.0, 1.0]
