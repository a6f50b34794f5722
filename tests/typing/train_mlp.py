"""A typed PyTorch-style training script: tools/typecheck.sh type-checks it (mypy and basedpyright,
0 errors expected) and tests/test_stubs.py runs it, so the stubs describe code that really works."""
from __future__ import annotations

import tapegrad as torch
import tapegrad.nn as nn
import tapegrad.nn.functional as F
from tapegrad import Tensor
from tapegrad.optim import SGD, Optimizer
from tapegrad.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, n_in: int, n_hidden: int, n_out: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_out)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: Tensor) -> Tensor:
        h = F.relu(self.fc1(x.view(x.size(0), -1)))
        return self.fc2(self.dropout(h))


def make_data(n: int, n_in: int, n_classes: int) -> tuple[Tensor, Tensor]:
    centers = torch.randn(n_classes, n_in) * 3
    labels = torch.randint(0, n_classes, (n,))
    features = centers[labels] + torch.randn(n, n_in)
    return features, labels


def train_epoch(model: nn.Module, loader: DataLoader, optimizer: Optimizer) -> float:
    model.train()
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * x.shape[0]
    return total / len(loader.dataset)


@torch.no_grad()
def accuracy(model: nn.Module, features: Tensor, labels: Tensor) -> float:
    model.eval()
    predictions = model(features).argmax(dim=1)
    return float((predictions == labels).float().mean().item())


def main() -> None:
    torch.manual_seed(0)
    features, labels = make_data(256, 8, 3)
    loader = DataLoader(TensorDataset(features, labels), batch_size=32, shuffle=True)
    model = MLP(8, 32, 3)
    optimizer = SGD(model.parameters(), lr=0.1, momentum=0.9)
    n_params = sum(p.numel() for p in model.parameters())
    first = last = train_epoch(model, loader, optimizer)
    for _ in range(4):
        last = train_epoch(model, loader, optimizer)
    with torch.no_grad():
        logits: Tensor = model(features[:4])
        probs = logits.softmax(dim=-1)
    shape: torch.Size = probs.shape
    rows: int = probs.size(0)
    weight_norm = model.fc1.weight.detach().norm().item()
    print(f"{n_params} parameters, loss {first:.3f} -> {last:.3f}, "
          f"accuracy {accuracy(model, features, labels):.2f}, probs {tuple(shape)} ({rows} rows), "
          f"|W1| {weight_norm:.2f}")
    assert last < first
    grad = model.fc2.weight.grad
    if grad is not None:
        assert grad.shape == model.fc2.weight.shape
    a = torch.ones(2, 3, requires_grad=True)
    b = (a * 2 + 1) @ a.T - a.sum() / 4
    b.sum().backward()
    assert a.grad is not None and bool((a.grad != 0).all())
    x0: Tensor = b[0]
    print(x0.tolist(), (b > 0).sum().item(), b.dtype, b.device)


if __name__ == "__main__":
    main()
