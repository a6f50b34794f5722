"""A fixed-seed budget of tools/fuzz_surface.py (random programs over the PyTorch-compatible
surface, compared with PyTorch): values, dtypes, shapes, gradients, second derivatives,
exception types, in-place version checks, no_grad and tapegrad.compile.

Differences triaged as deliberate or known (fuzz_surface.KNOWN) are filtered; anything else
fails with the seed, which `python tools/fuzz_surface.py --repro SEED` replays.  Run the tool for
longer by hand (`--seconds 600`).
"""
import os
import sys
import warnings

import pytest

pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import fuzz_surface  # noqa: E402

SEEDS_PER_CHUNK = 40
CHUNKS = 6


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_surface_fixed_seeds(chunk):
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(chunk * SEEDS_PER_CHUNK, (chunk + 1) * SEEDS_PER_CHUNK):
            prog, findings = fuzz_surface.check_seed(seed)
            failures += [f"seed {seed} [{cat}] {prog.op}/{prog.mode}: {prog.case.desc}: "
                         f"{msg[:300]}" for cat, msg in findings]
    assert not failures, "\n".join(failures)
