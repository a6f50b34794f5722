"""`python -m tapegrad demo chars`: a character-level GRU language model on a bundled short text.

Written the way a PyTorch user writes a char-RNN script (only the import differs): random windows
of the text as batches, an Embedding -> GRU -> Linear model, Adam with gradient clipping, then
sampling one character at a time with `multinomial` at a temperature, carrying the GRU's state.
"""
from __future__ import annotations as _annotations

import sys
import time
from importlib import resources

import tapegrad as torch
from tapegrad import nn


def load_text() -> str:
    """The short original text shipped in tapegrad/data (see data/README-stories.txt)."""
    return resources.files("tapegrad").joinpath("data/stories.txt").read_text(encoding="utf-8")


class Vocabulary:
    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str):
        return torch.tensor([self.index[c] for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


class CharGRU(nn.Module):
    def __init__(self, vocab_size: int, embed: int = 32, hidden: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.gru = nn.GRU(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, ids, state=None):
        out, state = self.gru(self.embed(ids), state)
        return self.head(out), state


def random_windows(data, batch_size: int, seq_len: int):
    """A batch of `seq_len` characters from random places and, as targets, the next characters."""
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,))
    x = torch.stack([data[s:s + seq_len] for s in starts.tolist()])
    y = torch.stack([data[s + 1:s + seq_len + 1] for s in starts.tolist()])
    return x, y


def generate(model: CharGRU, vocab: Vocabulary, prompt: str, length: int,
             temperature: float) -> str:
    """Continue `prompt` by `length` characters, each drawn from softmax(logits / temperature)."""
    model.eval()
    with torch.no_grad():
        logits, state = model(vocab.encode(prompt).unsqueeze(0))
        ids = []
        for _ in range(length):
            probs = torch.softmax(logits[0, -1] / temperature, dim=-1)
            next_id = torch.multinomial(probs, num_samples=1)
            ids.append(int(next_id.item()))
            logits, state = model(next_id.view(1, 1), state)
    model.train()
    return prompt + vocab.decode(ids)


class StepBar:
    """A plain-text progress bar over training steps: redrawn in place on a terminal, otherwise
    one line per tenth of the run (so logs and pipes stay readable)."""

    def __init__(self, total: int, stream=sys.stdout, width: int = 30) -> None:
        self.total, self.stream, self.width = total, stream, width
        self.tty = stream.isatty()
        self.next_report = 0

    def update(self, step: int, loss: float, rate: float) -> None:
        done = int(self.width * step / self.total)
        line = (f"step {step:>{len(str(self.total))}}/{self.total} "
                f"[{'#' * done}{'.' * (self.width - done)}] loss {loss:.3f}  {rate:,.0f} chars/s")
        if self.tty:
            self.stream.write("\r" + line + ("\n" if step == self.total else ""))
        elif step * 10 >= self.next_report * self.total:
            self.stream.write(line + "\n")
            self.next_report = step * 10 // self.total + 1
        self.stream.flush()


def train_chars(steps: int = 300, lr: float = 5e-3, batch_size: int = 32, seq_len: int = 64,
                seed: int = 0, temperature: float = 0.7, samples: int = 3, sample_length: int = 200,
                plot: str | None = None, stream=sys.stdout) -> float:
    """Train, print progress and samples; return the mean training loss of the last 10% steps."""
    start = time.perf_counter()
    torch.manual_seed(seed)
    text = load_text()
    vocab = Vocabulary(text)
    data = vocab.encode(text)
    model = CharGRU(len(vocab))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    loss_fn = nn.CrossEntropyLoss()
    print(f"tapegrad {torch.version.tapegrad_version}: character-level GRU (embedding 32, hidden 128) on "
          f"{len(text):,} characters ({len(vocab)} distinct), {steps} steps of {batch_size} "
          f"windows x {seq_len} characters, Adam lr {lr}", file=stream)
    bar = StepBar(steps, stream)
    losses = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        x, y = random_windows(data, batch_size, seq_len)
        optimizer.zero_grad()
        logits, _ = model(x)
        loss = loss_fn(logits.reshape(-1, len(vocab)), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        bar.update(step, losses[-1], step * batch_size * seq_len / (time.perf_counter() - t0))
    tail = losses[-max(1, steps // 10):]
    final = sum(tail) / len(tail)
    print(f"final training loss {final:.3f} (uniform guessing: "
          f"{torch.log(torch.tensor(float(len(vocab)))).item():.3f}); training time "
          f"{time.perf_counter() - start:.2f} s", file=stream)
    prompts = ["The ", "In the ", "She "]
    for i in range(samples):
        sample = generate(model, vocab, prompts[i % len(prompts)], sample_length, temperature)
        print(f"\n--- sample {i + 1} (temperature {temperature}) ---\n{sample}", file=stream)
    if plot:
        from .demo import plot_curves
        plot_curves(plot, losses, xlabel="step")
    return final
