"""Shape and dtype mistakes beginners make, each triggered on purpose and printed, as a
"debugging PyTorch errors" tutorial does."""
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def explain(title, fn):
    try:
        out = fn()
    except Exception as e:
        print(f"[{title}] {type(e).__name__}: {e}")
        print("   last line:", traceback.format_exc().strip().splitlines()[-1])
    else:
        print(f"[{title}] ok -> {tuple(out.shape) if isinstance(out, torch.Tensor) else out}")


x = torch.randn(32, 784)
model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
explain("flattened input", lambda: model(x))
explain("image not flattened", lambda: model(torch.randn(32, 1, 28, 28)))
explain("flatten first", lambda: model(torch.randn(32, 1, 28, 28).view(32, -1)))
explain("wrong view", lambda: torch.randn(32, 1, 28, 28).view(32, 780))
explain("view after transpose", lambda: torch.randn(4, 6).t().view(-1))
explain("reshape after transpose", lambda: torch.randn(4, 6).t().reshape(-1))
explain("two -1", lambda: torch.randn(4, 6).view(-1, -1))
explain("matmul", lambda: torch.randn(3, 4) @ torch.randn(3, 4))
explain("matmul fixed", lambda: torch.randn(3, 4) @ torch.randn(3, 4).T)
explain("bmm batch", lambda: torch.bmm(torch.randn(2, 3, 4), torch.randn(3, 4, 5)))
explain("broadcast", lambda: torch.randn(3, 4) + torch.randn(4, 3))
explain("cat", lambda: torch.cat([torch.randn(2, 3), torch.randn(2, 4)], dim=0))
explain("stack", lambda: torch.stack([torch.randn(3), torch.randn(4)]))
explain("expand", lambda: torch.randn(3, 2).expand(3, 4))
explain("squeeze dim", lambda: torch.randn(3, 1).squeeze(2))
explain("unsqueeze dim", lambda: torch.randn(3).unsqueeze(3))
explain("index", lambda: torch.arange(5)[5])
explain("float index", lambda: torch.arange(5)[torch.tensor([1.0])])
explain("conv 3-d input", lambda: nn.Conv2d(3, 8, 3)(torch.randn(3, 32, 32)))
explain("conv channels", lambda: nn.Conv2d(3, 8, 3)(torch.randn(1, 1, 32, 32)))
explain("conv too small", lambda: nn.Conv2d(3, 8, 5)(torch.randn(1, 3, 3, 3)))
explain("lstm input size", lambda: nn.LSTM(10, 20, batch_first=True)(torch.randn(4, 7, 12)))
explain("batchnorm batch 1", lambda: nn.BatchNorm1d(5)(torch.randn(1, 5)))
explain("embedding range", lambda: nn.Embedding(10, 3)(torch.tensor([3, 10])))
explain("embedding float", lambda: nn.Embedding(10, 3)(torch.tensor([3.0])))
logits = torch.randn(4, 3)
explain("CE float target", lambda: F.cross_entropy(logits, torch.tensor([0.0, 1.0, 2.0, 1.0])))
explain("CE target shape", lambda: F.cross_entropy(logits, torch.tensor([[0], [1], [2], [1]])))
explain("CE class range", lambda: F.cross_entropy(logits, torch.tensor([0, 1, 3, 1])))
explain("CE batch", lambda: F.cross_entropy(logits, torch.tensor([0, 1])))
explain("mm int float", lambda: torch.mm(torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2)))
explain("linear double", lambda: nn.Linear(4, 2)(torch.ones(3, 4, dtype=torch.float64)))
explain("pad lengths", lambda: F.pad(torch.ones(1, 2, 3), (1, 2, 3)))
explain("einsum", lambda: torch.einsum("ij,jk->ik", torch.ones(2, 3), torch.ones(4, 5)))
explain("ragged tensor", lambda: torch.tensor([[1, 2], [3]]))
explain("int requires_grad", lambda: torch.ones(3, dtype=torch.long, requires_grad=True))
explain("item of many", lambda: torch.ones(3).item())
shape = torch.ones(2, 3).shape
def set_shape():
    shape[0] = 4
explain("assign into a shape", set_shape)
explain("call a shape", lambda: shape(0))
explain("Size of floats", lambda: torch.Size([2.0, 3]))
explain("linspace without steps", lambda: torch.linspace(0, 1))
explain("pow without exponent", lambda: torch.pow(torch.ones(2)))
explain("dtype attribute", lambda: torch.float32.itemsize)
explain("dtype is not callable", lambda: torch.float32(1))
