"""Shifts every PyTorch seed by CORPUS_SEED_OFFSET, to test that a corpus script's output does
not depend on the exact random stream (tapegrad's streams differ from PyTorch's by design).

tools/run_corpus.py --check-seeds puts this directory on PYTHONPATH and runs the scripts under
real PyTorch; a script whose output changes when only the seeds change prints something random.
"""
import os

import torch

_OFFSET = int(os.environ.get("CORPUS_SEED_OFFSET", "1"))
_manual_seed = torch.manual_seed


def manual_seed(seed):
    return _manual_seed(int(seed) + _OFFSET)


class Generator(torch.Generator):
    def manual_seed(self, seed):
        return super().manual_seed(int(seed) + _OFFSET)


torch.manual_seed = manual_seed
torch.random.manual_seed = manual_seed
torch.Generator = Generator
_manual_seed(1000 + _OFFSET)  # scripts that never seed would otherwise start from torch's fixed seed
