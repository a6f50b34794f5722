"""The main job: train a small MLP classifier on the bundled 8x8 handwritten digits.

Written the way a PyTorch user writes a training script (only the import differs), so it doubles
as a check that tapegrad runs such scripts unchanged.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import time
from importlib import resources

import numpy as np

import tapegrad as torch
from tapegrad import nn
from tapegrad.utils.data import DataLoader, TensorDataset


def load_digits():
    """The 1,797 UCI digits shipped in tapegrad/data: (images as float32 in [0, 1], labels)."""
    with resources.files("tapegrad").joinpath("data/digits.csv.gz").open("rb") as raw:
        table = np.loadtxt(gzip.open(raw), delimiter=",", dtype=np.int64)
    return table[:, :64].astype(np.float32) / 16.0, table[:, 64]


def split(x, y, test_fraction: float, seed: int):
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def accuracy(model: nn.Module, x, y) -> float:
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    model.train()
    return float((pred == y).float().mean().item())


class Progress:
    """One line per epoch: a bar while it runs (on a terminal), then the epoch's figures."""

    def __init__(self, epochs: int, batches: int, stream=sys.stdout) -> None:
        self.epochs, self.batches, self.stream = epochs, batches, stream
        self.tty = stream.isatty()

    def update(self, epoch: int, batch: int) -> None:
        if self.tty:
            done = int(30 * batch / self.batches)
            self.stream.write(f"\repoch {epoch:>3}/{self.epochs} [{'#' * done}{'.' * (30 - done)}]")
            self.stream.flush()

    def end(self, epoch: int, loss: float, acc: float, rate: float) -> None:
        prefix = "\r" if self.tty else ""
        self.stream.write(f"{prefix}epoch {epoch:>3}/{self.epochs} [{'#' * 30}] loss {loss:.4f}  "
                          f"train acc {100 * acc:5.1f}%  {rate:,.0f} examples/s\n")
        self.stream.flush()


def plot_curves(path: str, losses, accs) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot needs matplotlib, which is not installed: pip install matplotlib "
              f"(no plot written to {path})")
        return
    fig, ax1 = plt.subplots(figsize=(6, 4))
    epochs = range(1, len(losses) + 1)
    ax1.plot(epochs, losses, color="tab:blue", label="loss")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("training loss", color="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(epochs, [100 * a for a in accs], color="tab:orange", label="accuracy")
    ax2.set_ylabel("training accuracy (%)", color="tab:orange")
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def train(epochs: int = 20, lr: float = 1e-2, batch_size: int = 64, seed: int = 0,
          plot: str | None = None, stream=sys.stdout) -> float:
    """Train, print progress, return the held-out test accuracy."""
    start = time.perf_counter()
    torch.manual_seed(seed)
    x, y = load_digits()
    (x_train, y_train), (x_test, y_test) = split(x, y, test_fraction=0.2, seed=seed)
    x_train, y_train = torch.tensor(x_train), torch.tensor(y_train)
    x_test, y_test = torch.tensor(x_test), torch.tensor(y_test)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True)
    model = make_model()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    print(f"tapegrad {torch.__version__}: MLP 64-128-10 on {len(x_train)} UCI digits "
          f"({len(x_test)} held out), {epochs} epochs, batch {batch_size}, Adam lr {lr}",
          file=stream)
    progress = Progress(epochs, len(loader), stream)
    losses, accs = [], []
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        total, seen = 0.0, 0
        for i, (xb, yb) in enumerate(loader, 1):
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
            seen += len(xb)
            progress.update(epoch, i)
        losses.append(total / seen)
        accs.append(accuracy(model, x_train, y_train))
        progress.end(epoch, losses[-1], accs[-1], seen / (time.perf_counter() - t0))
    test_acc = accuracy(model, x_test, y_test)
    print(f"test accuracy {100 * test_acc:.1f}% on {len(x_test)} held-out digits; "
          f"total time {time.perf_counter() - start:.2f} s", file=stream)
    if plot:
        plot_curves(plot, losses, accs)
    return test_acc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tapegrad demo",
                                     description="Train an MLP on the bundled UCI digits.")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", metavar="FILE", help="write a PNG of the loss/accuracy curves")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        parser.error("--epochs and --batch-size must be positive and --lr > 0")
    train(args.epochs, args.lr, args.batch_size, args.seed, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
