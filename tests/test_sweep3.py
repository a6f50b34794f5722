"""Regressions found by differential sweeps of argument forms against PyTorch (sweep3):
nn.utils.rnn, torch.distributions and the indexing functions."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn.utils import rnn as tg_rnn

torch = pytest.importorskip("torch")
from torch.nn.utils import rnn as torch_rnn  # noqa: E402


# ---- nn.utils.rnn ---------------------------------------------------------------------------

@pytest.mark.parametrize("lengths, enforce_sorted", [
    ([[3, 2, 1]], True), ([[3, 2, 1]], False), (3, True), (3, False)])
def test_pack_padded_sequence_rejects_lengths_that_are_not_1d_as_pytorch(lengths, enforce_sorted):
    def run(lib, rnn):
        try:
            rnn.pack_padded_sequence(lib.zeros(3, 3, 2), lib.tensor(lengths),
                                     enforce_sorted=enforce_sorted)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e), str(e).split(",")[0]
        return None
    assert run(tg, tg_rnn) == run(torch, torch_rnn)


@pytest.mark.parametrize("method", ["half", "long", "int", "short", "char", "byte", "double",
                                    "float", "is_pinned"])
def test_packed_sequence_has_the_conversions_of_pytorch(method):
    def run(lib, rnn):
        packed = rnn.pack_sequence([lib.ones(3, 2), lib.ones(1, 2)])
        out = getattr(packed, method)()
        return out if isinstance(out, bool) else (str(out.data.dtype), out.batch_sizes.tolist())
    assert run(tg, tg_rnn) == run(torch, torch_rnn)
