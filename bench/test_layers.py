"""Interleaved ratios for the layer workloads of issue 17: a LeNet-5 step, a 2-layer LSTM step and
a 2-layer transformer-encoder step, and a small CNN with batch normalisation, tapegrad against
PyTorch eager (one thread each).

Each step is written as a PyTorch user writes it (an nn.Module, a loss, backward, an optimizer
step), once, and run by both libraries from the same initial weights and data.  Contenders run
round-robin in one process (tapegrad.bench.time_contenders), so the host's load hits both alike;
the medians and the tapegrad / torch ratio are printed after the run (bench_report).  Without
PyTorch only tapegrad's time is reported.  With --benchmark-disable (the CI smoke run) each step
runs a few times, to prove that it runs.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import bench as B

try:  # conftest.py has already pinned torch to one thread when it is installed
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

ROUNDS = 15


def lenet(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def bn_cnn(lib):
    """The small CNN of many tutorials: conv, batch norm, ReLU, pooling, twice, then a head."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def bn_cnn_data(rng):
    return (rng.standard_normal((32, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 32))


def lenet_data(rng):
    return (rng.standard_normal((64, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 64))


class _LSTMModel:
    """A factory: the module class is built per library (nn.Module subclasses differ)."""

    @staticmethod
    def build(lib):
        nn = lib.nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(32, 128, num_layers=2)
                self.head = nn.Linear(128, 32)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out)

        return Model()


def lstm_data(rng):
    return (rng.standard_normal((35, 20, 32)).astype(np.float32),
            rng.integers(0, 32, (35, 20)))


def encoder(lib):
    nn = lib.nn
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                         nn.Linear(64, 10))


def encoder_data(rng):
    return (rng.standard_normal((16, 32, 64)).astype(np.float32),
            rng.integers(0, 10, (16, 32)))


WORKLOADS = {
    "lenet": ("LeNet-5 step, 64x1x28x28, SGD", lenet, lenet_data),
    "lstm": ("2-layer LSTM step, hidden 128, seq 35, batch 20, SGD", _LSTMModel.build, lstm_data),
    "encoder": ("2-layer transformer encoder step, d 64, 4 heads, seq 32, batch 16, SGD",
                encoder, encoder_data),
    "bn_cnn": ("CNN with BatchNorm2d step, 32x1x28x28, SGD", bn_cnn, bn_cnn_data),
}


def _step_contender(lib, model, x, y):
    """One training step as a script writes it; the model's outputs are flattened to (N, C)."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = lib.nn.CrossEntropyLoss()
    xs, ys = lib.from_numpy(x), lib.from_numpy(y)

    def step(model, xs, ys):
        opt.zero_grad()
        out = model(xs)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), ys.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return B.Contender(lambda: (model, xs, ys), step)


def _copy_weights(src, dst):
    """torch's initial weights into tapegrad's module (same names: the layers interchange)."""
    state = {k: tg.tensor(v.detach().numpy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_layers_interleaved(workload, bench_report, benchmark_disabled):
    label, build, data = WORKLOADS[workload]
    x, y = data(np.random.default_rng(0))
    ours = build(tg)
    ways = {}
    if torch is not None:
        torch.manual_seed(0)
        theirs = build(torch)
        _copy_weights(theirs, ours)
        ways["torch"] = _step_contender(torch, theirs, x, y)
    ways["tapegrad"] = _step_contender(tg, ours, x, y)
    rounds = 1 if benchmark_disabled else ROUNDS
    med, rounds = B.time_contenders(ways, rounds, budget=0.0, warmup=1 if benchmark_disabled else 3)
    assert all(t > 0 for t in med.values())
    line = (f"interleaved, {label}, median of {rounds} steps: "
            + ", ".join(f"{k} {v * 1e3:,.2f} ms" for k, v in med.items()))
    bench_report(line)
    if "torch" in med:
        bench_report(f"    tapegrad / torch = {med['tapegrad'] / med['torch']:.2f}")


# -- peak RSS of each workload, one fresh interpreter per library ----------------------------------

_RSS_PROBE = r"""
import sys
lib_name, workload, steps, bench_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if lib_name != "torch":
    sys.modules["torch"] = None         # this process must not load PyTorch at all
sys.path.insert(0, bench_dir)
import numpy as np
import test_layers as T
lib = __import__(lib_name)
if lib_name == "torch":
    lib.set_num_threads(1)
label, build, data = T.WORKLOADS[workload]
x, y = data(np.random.default_rng(0))
contender = T._step_contender(lib, build(lib), x, y)
args = contender.setup()
for _ in range(steps):
    contender.run(*args)
with open("/proc/self/status") as f:
    print(next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")))
"""


@pytest.mark.footprint
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_layers_peak_rss(workload, bench_report, benchmark_disabled):
    """Peak RSS (VmHWM) of 5 steps of each workload in a fresh interpreter per library; the issue's
    target is tapegrad's at most 1/4 of PyTorch's process."""
    import os
    import subprocess
    import sys
    libs = ["tapegrad"] + (["torch"] if torch is not None and not benchmark_disabled else [])
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    here = os.path.dirname(os.path.abspath(__file__))
    kib = {}
    for name in libs:
        out = subprocess.run([sys.executable, "-c", _RSS_PROBE, name, workload, "5", here],
                             capture_output=True, text=True, env=env, check=True)
        kib[name] = int(out.stdout.split()[-1])
    assert all(v > 0 for v in kib.values())
    line = f"peak RSS (VmHWM), 5 steps of {workload}: " + ", ".join(
        f"{k} {v / 1024:.1f} MiB" for k, v in kib.items())
    if "torch" in kib:
        line += f"; tapegrad / torch = {kib['tapegrad'] / kib['torch']:.2f}"
    bench_report(line)
