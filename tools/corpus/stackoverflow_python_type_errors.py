"""Pasted error threads about Python-level mistakes: an LSTM's (output, (h, c)) tuple fed to a Linear,
numpy arrays and lists into models, .grad before backward, typos in module names ("module 'torch'
has no attribute"), tensors as list indices, float(), math.sqrt and round() on tensors, and
bad layer sizes; each prints the error's type and message as the answer shows it."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def attempt(label, fn):
    try:
        out = fn()
        print(label, "->", out)
    except Exception as e:
        print(label, "->", type(e).__name__ + ":", e)


lstm = nn.LSTM(3, 4, batch_first=True)
fc = nn.Linear(4, 2)
seq = torch.zeros(2, 5, 3)
attempt("linear(tuple)", lambda: fc(lstm(seq)))
attempt("tuple.size", lambda: lstm(seq).size())
attempt("linear(numpy)", lambda: fc(np.zeros((2, 4), dtype=np.float32)))
attempt("linear(list)", lambda: fc([[0.0] * 4]))
attempt("relu(list)", lambda: F.relu([1.0, -1.0]))
attempt("torch.relu(numpy)", lambda: torch.relu(np.zeros(2)))
attempt("sigmoid(float)", lambda: torch.sigmoid(0.5))
attempt("exp(int)", lambda: torch.exp(2))
attempt("grad.zero_ before backward", lambda: torch.ones(2, requires_grad=True).grad.zero_())
attempt("tensor * None", lambda: torch.ones(2) * None)
attempt("None * tensor", lambda: None * torch.ones(2))
attempt("tensor + str", lambda: torch.ones(2) + "a")
attempt("cat list of lists", lambda: torch.cat([[1, 2], [3]]))
attempt("stack floats", lambda: torch.stack([1.0, 2.0]))
attempt("stack mixed", lambda: torch.stack([torch.ones(1), 2.0]))
attempt("list[tensor]", lambda: [10, 20, 30][torch.tensor([1, 2])])
attempt("list[tensor scalar]", lambda: [10, 20, 30][torch.tensor(1)])
attempt("list[float tensor]", lambda: [10, 20, 30][torch.tensor(1.0)])
attempt("range(tensor)", lambda: list(range(torch.tensor(3))))
attempt("unpack 3 into 2", lambda: (lambda a, b: None)(*torch.ones(3)))
attempt("a, b = tensor", lambda: [t.item() for t in torch.tensor([1, 2])])
attempt("astype", lambda: torch.ones(2).astype(np.float32))
attempt("append", lambda: torch.ones(2).append(1))
attempt("tensor()", lambda: torch.ones(2)())
attempt("torch typo", lambda: torch.flattern(torch.ones(2)))
attempt("tensor typo", lambda: torch.ones(2).flattern())
attempt("nn typo", lambda: nn.Linaer(2, 2))
attempt("F typo", lambda: F.relu6x(torch.ones(1)))
attempt("module attr typo", lambda: fc.weights)
attempt("reshape list of tensor", lambda: torch.ones(4).reshape([torch.tensor(2), 2]).shape)
attempt("randn float size", lambda: torch.randn(2.5))
attempt("ones numpy int", lambda: torch.ones(np.int64(2)).shape)
attempt("tensor from set", lambda: torch.tensor({1, 2}))
attempt("tensor from dict", lambda: torch.tensor({"a": 1}))
attempt("tensor from None", lambda: torch.tensor(None))
attempt("tensor from generator", lambda: torch.tensor(x for x in range(3)))
attempt("float(tensor 2 el)", lambda: float(torch.ones(2)))
attempt("np.float32(tensor)", lambda: np.float32(torch.tensor(1.5)))
attempt("math on tensor", lambda: __import__("math").sqrt(torch.tensor(4.0)))
attempt("math on 2 el", lambda: __import__("math").sqrt(torch.tensor([4.0, 9.0])))
attempt("np.exp(grad tensor)", lambda: np.exp(torch.tensor([1.0], requires_grad=True)))
attempt("round(tensor)", lambda: round(torch.tensor(2.567), 2))
attempt("hash tensor", lambda: isinstance(hash(torch.ones(1)), int))
attempt("in dict", lambda: torch.tensor(1) in {torch.tensor(1): 0})
attempt("in list", lambda: torch.tensor(2) in [torch.tensor(1), torch.tensor(2)])
attempt("tensor in tensor", lambda: 2 in torch.tensor([1, 2]))
attempt("forward no input", lambda: fc())
attempt("Linear float sizes", lambda: nn.Linear(2.0, 3))
attempt("Linear zero", lambda: nn.Linear(0, 3).weight.shape)
attempt("Linear negative", lambda: nn.Linear(-1, 3))
attempt("Conv tuple kernel", lambda: nn.Conv2d(1, 1, (3, 2)).weight.shape)
attempt("Sequential(lambda)", lambda: nn.Sequential(nn.Linear(2, 2), lambda x: x))
attempt("ModuleList(function)", lambda: nn.ModuleList([F.relu]))
