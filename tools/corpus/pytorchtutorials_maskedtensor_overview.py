"""Prototype tutorial 'MaskedTensor Overview', as a script: building masked tensors, indexing,
where's masked gradients, NaN-free gradients beside masked-out NaNs, safe softmax, nan* reductions
and the fully masked-out reduction."""
import warnings

import torch
from torch.masked import as_masked_tensor, masked_tensor

warnings.filterwarnings(action="ignore", category=UserWarning)

# construction, get_data / get_mask / to_tensor, indexing and slicing
values = torch.arange(24).reshape(2, 3, 4)
keep = values % 3 != 1
mt = masked_tensor(values.float(), keep)
print("mt[1]:\n", mt[1])
print("mt[:, 1:, ::2]:\n", mt[:, 1:, ::2])
print("transposed row:\n", mt.transpose(1, 2)[0, 2])
print("filled with -1:\n", mt[0].to_tensor(-1))
print("mask of mt[0, 0]:", mt[0, 0].get_mask())

# torch.where: the branch not taken gets no gradient (masked out, not zero)
x = torch.tensor([-8., -3, -0.5, 0, 2, 40, 80, 120])
neg = x < 0
mx = masked_tensor(x, neg, requires_grad=True)
my = masked_tensor(torch.ones_like(x), ~neg, requires_grad=True)
y = torch.where(neg, torch.exp(mx), my)
y.sum().backward()
print("y:\n", y)
print("mx.grad:\n", mx.grad)
print("my.grad:\n", my.grad)

# a masked-out branch that divides by zero: its gradient stays masked out
a = masked_tensor(torch.tensor(0.75), torch.tensor(True), requires_grad=True)
picked = torch.where(torch.tensor(False), a / 0, torch.ones(()))
print("where(False, a/0, 1):", picked)
print("grad wrt a:", torch.autograd.grad(picked, a))

# nansum's gradient problem: the NaN under the mask reaches nobody's gradient
data = torch.tensor([1.5, float("nan"), 2.0, 4.0])
scale = torch.tensor(2.0, requires_grad=True)
masked = masked_tensor(data, ~torch.isnan(data))
total = torch.sum(masked * scale)
print("sum:", total)
(g,) = torch.autograd.grad(total, scale)
print("d sum / d scale:", g)

# safe softmax: a fully masked-out column is masked out, not NaN
scores = torch.tensor([[0.2, -1.0, 1.5], [0.7, 0.3, -0.4], [1.1, 2.2, 0.9]])
kept = torch.tensor([[True, False, True], [True, False, False], [False, False, True]])
print("plain softmax:\n", scores.masked_fill(~kept, float("-inf")).softmax(0))
print("masked softmax:\n", masked_tensor(scores, kept).softmax(0))

# the nan* reductions as masked reductions
series = torch.arange(12).float()
series = series * series.fmod(3)
print("series:", series)
nonzero = masked_tensor(series, series != 0)
print("mean ignoring zeros:", torch.mean(nonzero))
print("argmin ignoring zeros:", torch.argmin(nonzero))
print("amax, amin:", torch.amax(nonzero), torch.amin(nonzero))
print("std:", torch.std(nonzero, 0))
everything_nan = torch.full((6,), float("nan"))
print("nanmean of all-NaN:", torch.nanmean(everything_nan))
print("masked mean of all-masked:", torch.mean(masked_tensor(everything_nan, ~torch.isnan(everything_nan))))

# as_masked_tensor keeps the graph of its data
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
squares = w * w
loss = as_masked_tensor(squares, torch.tensor([True, False, True]))
print("d loss / d squares:", torch.autograd.grad(loss.sum(), squares, retain_graph=True))
print("loss:", loss)
