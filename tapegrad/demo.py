"""The main job: train a small classifier (an MLP, or a CNN) on the bundled 8x8 handwritten digits.

Written the way a PyTorch user writes a training script (only the import differs), so it doubles
as a check that tapegrad runs such scripts unchanged. `python -m tapegrad demo chars` (a
character-level GRU, tapegrad/demo_chars.py) shares this module's command line and plotting.
"""
from __future__ import annotations as _annotations

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


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions, one 2x2 max pool, then a small classifier with dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.3), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x.view(-1, 1, 8, 8)))


# Per model: the description printed, the factory, and the defaults of epochs, lr, batch size.
# The CNN also anneals its learning rate (cosine) over the run: it needs it for >= 98.5%.
MODELS = {
    "mlp": ("MLP 64-128-10", make_model, dict(epochs=20, lr=1e-2, batch_size=64, anneal=False)),
    "cnn": ("CNN conv3x3(16)-conv3x3(32)-maxpool-64-10", DigitsCNN,
            dict(epochs=20, lr=3e-3, batch_size=32, anneal=True)),
}


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


def plot_curves(path: str, losses, accs=None, xlabel: str = "epoch") -> None:
    """The training loss (and, if given, training accuracy on a second axis) against `xlabel`."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot needs matplotlib, which is not installed: pip install matplotlib "
              f"(no plot written to {path})")
        return
    fig, ax1 = plt.subplots(figsize=(6, 4))
    xs = range(1, len(losses) + 1)
    ax1.plot(xs, losses, color="tab:blue", label="loss")
    ax1.set_xlabel(xlabel)
    ax1.set_ylabel("training loss", color="tab:blue")
    if accs is not None:
        ax2 = ax1.twinx()
        ax2.plot(xs, [100 * a for a in accs], color="tab:orange", label="accuracy")
        ax2.set_ylabel("training accuracy (%)", color="tab:orange")
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def train(epochs: int | None = None, lr: float | None = None, batch_size: int | None = None,
          seed: int = 0, plot: str | None = None, stream=sys.stdout, model: str = "mlp",
          train_subset: int | None = None) -> float:
    """Train, print progress, return the held-out test accuracy.

    Options left None take `model`'s defaults (MODELS). `train_subset` trains on only the first
    that many training digits (quick checks); the held-out set is always the full 20%.
    """
    start = time.perf_counter()
    description, factory, defaults = MODELS[model]
    epochs = defaults["epochs"] if epochs is None else epochs
    lr = defaults["lr"] if lr is None else lr
    batch_size = defaults["batch_size"] if batch_size is None else batch_size
    torch.manual_seed(seed)
    x, y = load_digits()
    (x_train, y_train), (x_test, y_test) = split(x, y, test_fraction=0.2, seed=seed)
    x_train, y_train = x_train[:train_subset], y_train[:train_subset]
    x_train, y_train = torch.tensor(x_train), torch.tensor(y_train)
    x_test, y_test = torch.tensor(x_test), torch.tensor(y_test)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True)
    net = factory()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(loader))
                 if defaults["anneal"] else None)
    print(f"tapegrad {torch.version.tapegrad_version}: {description} on {len(x_train)} UCI digits "
          f"({len(x_test)} held out), {epochs} epochs, batch {batch_size}, Adam lr {lr}"
          f"{' cosine-annealed' if scheduler is not None else ''}", file=stream)
    progress = Progress(epochs, len(loader), stream)
    losses, accs = [], []
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        total, correct, seen = 0.0, 0, 0
        for i, (xb, yb) in enumerate(loader, 1):
            optimizer.zero_grad()
            logits = net(xb)
            loss = loss_fn(logits, yb)
            loss.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            # Running figures over the epoch's batches (as the weights move, in train mode):
            # a second pass over the training set just to report them would cost a third more.
            total += loss.item() * len(xb)
            correct += int((logits.argmax(dim=1) == yb).sum().item())
            seen += len(xb)
            progress.update(epoch, i)
        losses.append(total / seen)
        accs.append(correct / seen)
        progress.end(epoch, losses[-1], accs[-1], seen / (time.perf_counter() - t0))
    test_acc = accuracy(net, x_test, y_test)
    print(f"test accuracy {100 * test_acc:.1f}% on {len(x_test)} held-out digits; "
          f"total time {time.perf_counter() - start:.2f} s", file=stream)
    if plot:
        plot_curves(plot, losses, accs)
    return test_acc


# Options of one task only (default None, so that giving one to the other task is an error).
DIGITS_ONLY = ("model", "epochs", "train_subset")
CHARS_ONLY = ("steps", "seq_len", "temperature", "samples", "sample_length")
CHARS_DEFAULTS = dict(lr=5e-3, batch_size=32, steps=300, seq_len=64, temperature=0.7, samples=3,
                      sample_length=200)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tapegrad demo",
        description="Train a small model with tapegrad, written as a PyTorch script. 'digits' "
                    "(the default) classifies the bundled 8x8 handwritten digits with an MLP or "
                    "a CNN; 'chars' trains a character-level GRU on a bundled short text and "
                    "prints samples from it.")
    parser.add_argument("task", nargs="?", choices=("digits", "chars"), default="digits",
                        help="what to train (default: digits)")
    digits = parser.add_argument_group("digits options")
    digits.add_argument("--model", choices=tuple(MODELS),
                        help="mlp (default: 20 epochs, Adam lr 0.01, batch 64) or cnn (20 "
                             "epochs, Adam lr 0.003 annealed, batch 32)")
    digits.add_argument("--epochs", type=int)
    digits.add_argument("--train-subset", type=int, metavar="N",
                        help="train on the first N training digits only (quick checks)")
    chars = parser.add_argument_group("chars options")
    chars.add_argument("--steps", type=int, help="training steps (default 300)")
    chars.add_argument("--seq-len", type=int, help="characters per window (default 64)")
    chars.add_argument("--temperature", type=float, help="sampling temperature (default 0.7)")
    chars.add_argument("--samples", type=int, help="samples printed (default 3)")
    chars.add_argument("--sample-length", type=int, help="characters per sample (default 200)")
    both = parser.add_argument_group("options of both")
    both.add_argument("--lr", type=float, help="Adam's learning rate (default: the model's)")
    both.add_argument("--batch-size", type=int, help="default: the model's")
    both.add_argument("--seed", type=int, default=0, help="seeds weights, batches and samples")
    both.add_argument("--plot", metavar="FILE",
                      help="write a PNG of the training curves (needs matplotlib)")
    both.add_argument("--threads", type=int, default=1,
                      help="BLAS threads (default 1: these matrices are small, and more threads "
                           "only contend, much worse on a busy machine)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    own, other = (DIGITS_ONLY, CHARS_ONLY) if args.task == "digits" else (CHARS_ONLY, DIGITS_ONLY)
    misplaced = [name for name in other if getattr(args, name) is not None]
    if misplaced:
        flag = "--" + misplaced[0].replace("_", "-")
        parser.error(f"{flag} is an option of 'demo {'chars' if args.task == 'digits' else 'digits'}',"
                     f" not of 'demo {args.task}'")
    if args.task == "chars":
        for name, value in CHARS_DEFAULTS.items():
            if getattr(args, name) is None:
                setattr(args, name, value)
    positive = {"--epochs": args.epochs, "--batch-size": args.batch_size, "--steps": args.steps,
                "--seq-len": args.seq_len, "--sample-length": args.sample_length,
                "--train-subset": args.train_subset, "--threads": args.threads}
    for flag, value in positive.items():
        if value is not None and value < 1:
            parser.error(f"{flag} must be positive, got {value}")
    for flag, value in {"--lr": args.lr, "--temperature": args.temperature}.items():
        if value is not None and value <= 0:
            parser.error(f"{flag} must be > 0, got {value}")
    if args.samples is not None and args.samples < 0:
        parser.error(f"--samples must be >= 0, got {args.samples}")

    from .bench import limit_threads
    limit_threads(args.threads)
    if args.task == "chars":
        from .demo_chars import train_chars
        train_chars(args.steps, args.lr, args.batch_size, args.seq_len, args.seed,
                    args.temperature, args.samples, args.sample_length, args.plot)
    else:
        train(args.epochs, args.lr, args.batch_size, args.seed, args.plot,
              model=args.model or "mlp", train_subset=args.train_subset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
